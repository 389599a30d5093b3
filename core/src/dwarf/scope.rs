//! Scopes: the variables visible at an address. One walk of a function instance's lexical
//! blocks around the address ([`Visible`]) serves both the lookup of a variable by name and
//! the list of available variables an error offers; the unit's globals come after it.

use alloc::string::String;
use alloc::vec::Vec;

use gimli::constants as dw;

use super::die::MAX_DEPTH;
use super::error::{gimli_err, Available, Error, MAX_AVAILABLE};
use super::resolver::{DieRef, Resolver, R};
use super::sites::Site;

/// The named parameters and variables of a function instance's scopes around one address:
/// the instance's own (depth 0), then those of each lexical block that holds the address
/// (depth 1, 2, ...), each scope's in declaration order.
pub(super) struct Visible<'s> {
    vars: Vec<(u32, DieRef, &'s [u8])>,
}

impl<'s> Visible<'s> {
    /// The DIE `name` means here: the innermost scope's wins, the first declared within one
    /// scope.
    fn innermost(&self, name: &[u8]) -> Option<DieRef> {
        let mut best: Option<(u32, DieRef)> = None;
        for &(depth, die, n) in &self.vars {
            if n == name && best.is_none_or(|(d, _)| depth > d) {
                best = Some((depth, die));
            }
        }
        best.map(|(_, die)| die)
    }

    /// The variables no inner one of the same name shadows, outer scopes first.
    fn unshadowed(&self) -> impl Iterator<Item = (DieRef, &'s [u8])> + '_ {
        self.vars
            .iter()
            .filter(|&&(_, die, name)| self.innermost(name) == Some(die))
            .map(|&(_, die, name)| (die, name))
    }
}

/// Whether a variable DIE has a location or a constant value (else it is a declaration, or
/// a variable the compiler dropped).
fn has_location(e: &gimli::DebuggingInformationEntry<'_, '_, R<'_>>) -> Result<bool, Error> {
    Ok(e.attr_value(dw::DW_AT_location)
        .map_err(gimli_err("DW_AT_location"))?
        .is_some()
        || e.attr_value(dw::DW_AT_const_value)
            .map_err(gimli_err("DW_AT_const_value"))?
            .is_some())
}

impl<'s> Resolver<'s> {
    /// The variables visible at `pc` in `site`: the one walk of its scopes (see
    /// [`Visible`]).
    ///
    /// # Errors
    /// Debug info that does not parse; [`Error::Limit`] past [`MAX_DEPTH`] nested blocks.
    pub(super) fn visible(&self, site: &Site, pc: u64) -> Result<Visible<'s>, Error> {
        let mut vars = Vec::new();
        self.scope_variables(site.die, pc, 0, &mut vars)?;
        Ok(Visible { vars })
    }

    /// Appends the named parameters and variables of `scope`, then of the lexical blocks
    /// around `pc` in it (recursively), each with its nesting depth.
    fn scope_variables(
        &self,
        scope: DieRef,
        pc: u64,
        depth: u32,
        out: &mut Vec<(u32, DieRef, &'s [u8])>,
    ) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(Error::Limit {
                what: "nested lexical blocks",
                limit: MAX_DEPTH,
            });
        }
        let unit = self.unit(scope.unit)?;
        let mut tree = unit
            .entries_tree(Some(scope.offset))
            .map_err(gimli_err("scope"))?;
        let root = tree.root().map_err(gimli_err("scope"))?;
        let mut children = root.children();
        let mut blocks = Vec::new();
        while let Some(child) = children.next().map_err(gimli_err("scope child"))? {
            let e = child.entry();
            let die = DieRef {
                unit: scope.unit,
                offset: e.offset(),
            };
            match e.tag() {
                dw::DW_TAG_formal_parameter | dw::DW_TAG_variable => {
                    if let Some(name) = self.name_of(die)? {
                        out.push((depth, die, name));
                    }
                }
                dw::DW_TAG_lexical_block => blocks.push(die),
                _ => {}
            }
        }
        for block in blocks {
            if self.ranges(block)?.iter().any(|&(b, e)| pc >= b && pc < e) {
                self.scope_variables(block, pc, depth + 1, out)?;
            }
        }
        Ok(())
    }

    /// The variable or parameter `name` visible at `pc` in `site`: the innermost lexical
    /// block's first, then the function's (both in `visible`), then the unit's globals, then
    /// other units'.
    pub(super) fn find_variable(
        &self,
        site: &Site,
        visible: &Visible<'s>,
        pc: u64,
        name: &str,
    ) -> Result<DieRef, Error> {
        if let Some(d) = visible.innermost(name.as_bytes()) {
            return Ok(d);
        }
        // Globals: this unit first, then every other that may name it.
        let mut order: Vec<usize> = alloc::vec![site.die.unit];
        order.extend(
            self.candidate_units(name.as_bytes())?
                .into_iter()
                .filter(|&u| u != site.die.unit),
        );
        let mut declared = None;
        for u in order {
            if let Some(d) = self.global(u, name)? {
                if has_location(&self.entry(d)?.1)? {
                    return Ok(d);
                }
                declared = declared.or(Some(d));
            }
        }
        if let Some(d) = declared {
            // Its location query names the reason (optimized out).
            return Ok(d);
        }
        Err(Error::VariableNotFound {
            name: String::from(name),
            pc,
            available: Available::default(),
        })
    }

    /// `e` with the variables available at its address filled in, when it is about a
    /// variable that is not there or not fetchable.
    pub(super) fn with_available(&self, e: Error, site: &Site, visible: &Visible<'s>) -> Error {
        match e {
            Error::VariableNotFound { name, pc, .. } => Error::VariableNotFound {
                name,
                pc,
                available: self.available(site, visible, pc),
            },
            Error::NotAvailable {
                name, pc, reason, ..
            } => Error::NotAvailable {
                name,
                pc,
                reason,
                available: self.available(site, visible, pc),
            },
            other => other,
        }
    }

    /// The variables visible at `pc` in `site` whose value a prologue can fetch there: the
    /// scopes' parameters and locals (the innermost of a name wins, as in
    /// [`Resolver::find_variable`]), then the unit's globals not shadowed by them. Debug info
    /// that does not parse ends the list early rather than failing: this only words an error.
    fn available(&self, site: &Site, visible: &Visible<'s>, pc: u64) -> Available {
        let mut out = Available::default();
        let mut push = |name: &[u8]| -> bool {
            if out.names.len() >= MAX_AVAILABLE {
                out.more = true;
                return false;
            }
            out.names.push(String::from_utf8_lossy(name).into_owned());
            true
        };
        for (die, name) in visible.unshadowed() {
            let text = core::str::from_utf8(name).unwrap_or("");
            if self.variable_value(site, die, pc, text).is_ok() && !push(name) {
                return out;
            }
        }
        // Names a global must not have: every scope's, and the globals already listed.
        let mut taken: Vec<&[u8]> = visible.vars.iter().map(|&(_, _, n)| n).collect();
        let _ = self.unit_variables(site.die.unit, |die, _| {
            let Ok(Some(name)) = self.name_of(die) else {
                return Ok(true);
            };
            if taken.contains(&name) {
                return Ok(true);
            }
            let text = core::str::from_utf8(name).unwrap_or("");
            if self.variable_value(site, die, pc, text).is_ok() {
                taken.push(name);
                return Ok(push(name));
            }
            Ok(true)
        });
        out
    }

    /// A unit-level variable `name` with a location (or a constant value), else its
    /// declaration. Remembered per unit and name: every site of a function inlined in many
    /// places asks the same units for the same global.
    fn global(&self, unit_index: usize, name: &str) -> Result<Option<DieRef>, Error> {
        let key = (unit_index, String::from(name));
        if let Some(found) = self.globals.borrow().get(&key) {
            return Ok(*found);
        }
        let mut found = None;
        // A declaration, or a static the compiler dropped: kept while looking for the
        // definition.
        let mut fallback = None;
        self.unit_variables(unit_index, |die, e| {
            let has_loc = has_location(e)?;
            if self.name_of(die)? == Some(name.as_bytes()) {
                if has_loc {
                    found = Some(die);
                    return Ok(false);
                }
                fallback = fallback.or(Some(die));
            }
            Ok(true)
        })?;
        let found = found.or(fallback);
        self.globals.borrow_mut().insert(key, found);
        Ok(found)
    }

    /// Calls `visit` with each variable at the top of unit `unit_index` (its globals), in
    /// declaration order, until it returns `false`.
    fn unit_variables(
        &self,
        unit_index: usize,
        mut visit: impl FnMut(
            DieRef,
            &gimli::DebuggingInformationEntry<'_, '_, R<'s>>,
        ) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        let unit = self.unit(unit_index)?;
        let mut tree = unit.entries_tree(None).map_err(gimli_err("unit"))?;
        let root = tree.root().map_err(gimli_err("unit"))?;
        let mut children = root.children();
        while let Some(child) = children.next().map_err(gimli_err("unit child"))? {
            let e = child.entry();
            if e.tag() != dw::DW_TAG_variable {
                continue;
            }
            let die = DieRef {
                unit: unit_index,
                offset: e.offset(),
            };
            if !visit(die, e)? {
                break;
            }
        }
        Ok(())
    }
}
