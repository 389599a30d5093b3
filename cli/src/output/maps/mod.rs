//! The maps the objects declare, read and printed at exit and every `--interval S`, and
//! served as metric families by `--metrics` ([`super::metrics::maps`]).
//!
//! ```text
//! objects' map definitions ──is_shown──► MapTable (a dup'd fd, BTF types, Shape)
//!        MapTable::read ──► entries (sorted, per-CPU summed; --clear empties the map)
//!        draw::dump_into ──► text / JSON, histograms as bpftrace draws them
//! ```
//!
//! Internal maps are never shown: `.rodata`, `.data`, `.kconfig`, perf event arrays, ring
//! buffers, program arrays, stack traces, map-in-map, the usdt tables, sluice's own
//! `target_tgid` ([`table::is_shown`]). Each `.bss` variable is a table of its own
//! ([`table::Var`]: elements by index, all-zero ones left out), where libbpf-tools such as
//! softirqs keep their counts and histograms.

pub mod draw;
pub mod table;

use std::sync::Arc;

use sluice_core::object::{MapKind, ObjectStorage};
use sluice_core::Object;
use sluice_runtime::load::LoadedObject;
use sluice_runtime::session::ObjectSource;

pub use draw::Style;
pub use table::{MapTable, OwnedBtf, Shape};

/// Parses `--hist MAP=linear,STEP` (or `MAP=log2`): the map and its linear step.
///
/// # Errors
/// A message for anything else.
pub fn parse_hist(v: &str) -> Result<(String, Option<u64>), String> {
    let bad = || format!("--hist wants MAP=linear,STEP or MAP=log2, got '{v}'");
    let (map, how) = v.split_once('=').ok_or_else(bad)?;
    if map.is_empty() {
        return Err(bad());
    }
    if how == "log2" {
        return Ok((map.to_owned(), None));
    }
    let step = how
        .strip_prefix("linear,")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .ok_or_else(bad)?;
    Ok((map.to_owned(), Some(step)))
}

/// The tables of the maps `objects` declare (their `loaded` counterparts, in the same
/// order), `hist` the `--hist` choices.
///
/// # Errors
/// A `--hist` map no object declares; a dup that failed.
pub fn tables(
    objects: &[ObjectSource],
    loaded: &[LoadedObject],
    hist: &[(String, Option<u64>)],
) -> Result<Vec<Arc<MapTable>>, String> {
    let mut out = Vec::new();
    for (src, obj) in objects.iter().zip(loaded) {
        let mut storage = ObjectStorage::new();
        let Ok(o) = Object::open(&src.bytes, &mut storage) else {
            continue;
        };
        let btf = o.btf_bytes().and_then(OwnedBtf::new).map(Arc::new);
        for (i, def) in o.maps().iter().enumerate() {
            if def.kind == MapKind::Bss {
                if let (Some(btf), Some(map)) = (&btf, obj.maps().get(i)) {
                    variables(&mut out, &src.name, &o, def.name, map, btf)?;
                }
                continue;
            }
            if !table::is_shown(def.kind, def.map_type, def.name) {
                continue;
            }
            // The loaded maps are in the object's order, named as the kernel names them
            // (cut to 15 bytes).
            let Some(map) = obj
                .maps()
                .get(i)
                .filter(|m| def.name.starts_with(m.name()))
                .or_else(|| obj.map(def.name))
            else {
                continue;
            };
            let linear = hist.iter().find(|(m, _)| m == def.name).and_then(|h| h.1);
            let types = (def.btf_key_type_id, def.btf_value_type_id);
            out.push(Arc::new(MapTable::new(
                &src.name,
                def.name,
                map,
                btf.clone(),
                types,
                linear,
            )?));
        }
    }
    if let Some((m, _)) = hist.iter().find(|(m, _)| !out.iter().any(|t| &t.name == m)) {
        return Err(format!("--hist {m}=...: no object declares a map '{m}'"));
    }
    Ok(out)
}

/// The tables of the global variables of `.bss` map `section` (softirqs keeps its counts
/// and histograms there); the all-zero ones print nothing.
fn variables(
    out: &mut Vec<Arc<MapTable>>,
    object: &str,
    o: &Object<'_, '_>,
    section: &str,
    map: &sluice_runtime::load::Map,
    btf: &Arc<OwnedBtf>,
) -> Result<(), String> {
    let vars = btf
        .with(|b| {
            let mut vars = Vec::new();
            let Some(sec) = b.find(section, sluice_core::btf::Kind::Datasec) else {
                return vars;
            };
            for v in sec.datasec_vars() {
                let Some(var) = b.ty(v.type_id) else { continue };
                let (Some(ty), name) = (var.ref_type(), var.name()) else {
                    continue;
                };
                let offset = o
                    .variable_offset(name)
                    .map_or(Some(v.offset as usize), |o| usize::try_from(o).ok());
                // An array's elements each; a scalar as one.
                let (elem, n) = match b.resolve_type(ty).ok().flatten().and_then(|t| t.array()) {
                    Some(a) => (a.elem_type, a.nelems as usize),
                    None => (ty, 1),
                };
                if let (Some(offset), Ok(size)) = (offset, b.size_of(elem)) {
                    let size = size as usize;
                    vars.push((name.to_owned(), elem, table::Var { offset, size, n }));
                }
            }
            vars
        })
        .unwrap_or_default();
    for (name, elem, var) in vars {
        out.push(Arc::new(MapTable::variable(
            object,
            &name,
            map,
            btf.clone(),
            elem,
            var,
        )?));
    }
    Ok(())
}

/// One dump of every table at `time`, into `out`; a table that cannot be read says why on
/// stderr.
pub fn dump_all(out: &mut String, tables: &[Arc<MapTable>], clear: bool, style: Style) {
    let time = draw::time_of_day(std::time::SystemTime::now());
    for t in tables {
        match t.read(clear) {
            Ok(entries) => draw::dump_into(out, t, &entries, &time, style),
            Err(e) => crate::console::say!("sluice: map {} of {}: {e}", t.name, t.object),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hist_flags() {
        assert_eq!(parse_hist("h=linear,10"), Ok(("h".into(), Some(10))));
        assert_eq!(parse_hist("h=log2"), Ok(("h".into(), None)));
        assert!(parse_hist("h=linear,0").is_err());
        assert!(parse_hist("=log2").is_err());
        assert!(parse_hist("h").is_err());
    }
}
