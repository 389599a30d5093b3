//! Candidate matching: a local spec against one target candidate, member by member and
//! array by array, with libbpf's "essentially compatible" type rules.

use super::candidates::essential;
use super::kind::CoreReloKind;
use super::spec::{
    is_composite, is_flex_arr, kind_num, kinds_compat, skip, Acc, Fail, Spec, MAX_SPEC_LEN,
};
use crate::btf::types::{Kind, Type};
use crate::btf::Btf;

/// Type-comparison steps allowed per relocation before giving up with
/// [`BtfError::TooDeep`].
const STEP_BUDGET: u32 = 1 << 20;
/// Recursion limit of the type comparisons (libbpf's).
const COMPAT_LEVEL: u32 = 32;

pub(super) struct Matcher<'x, 'l, 't> {
    pub(super) local: &'x Btf<'l>,
    pub(super) targ: &'x Btf<'t>,
    pub(super) steps: u32,
}

impl<'l, 't> Matcher<'_, 'l, 't> {
    pub(super) fn tick(&mut self) -> Result<(), Fail> {
        self.steps += 1;
        if self.steps > STEP_BUDGET {
            return Err(Fail::Hard("type comparison exceeded its step budget"));
        }
        Ok(())
    }

    /// libbpf's `bpf_core_fields_are_compat`.
    pub(super) fn fields_compat(&mut self, mut lid: u32, mut tid: u32) -> Result<bool, Fail> {
        for _ in 0..crate::btf::MAX_RESOLVE_DEPTH {
            self.tick()?;
            let (_, lt) = skip(self.local, lid)?;
            let (_, tt) = skip(self.targ, tid)?;
            if is_composite(&lt) && is_composite(&tt) {
                return Ok(true);
            }
            if !kinds_compat(&lt, &tt) {
                return Ok(false);
            }
            let (Some(lt), Some(tt)) = (lt, tt) else {
                return Ok(false);
            };
            match lt.kind() {
                Kind::Ptr | Kind::Float => return Ok(true),
                Kind::Fwd | Kind::Enum | Kind::Enum64 => {
                    let ln = essential(lt.name_bytes());
                    let tn = essential(tt.name_bytes());
                    return Ok(ln.is_empty() || tn.is_empty() || ln == tn);
                }
                Kind::Int => {
                    let lo = lt.int().map_or(0, |i| i.offset);
                    let to = tt.int().map_or(0, |i| i.offset);
                    return Ok(lo == 0 && to == 0);
                }
                Kind::Array => {
                    lid = lt.array().map_or(0, |a| a.elem_type);
                    tid = tt.array().map_or(0, |a| a.elem_type);
                }
                _ => return Ok(false),
            }
        }
        Err(Fail::Hard("array nesting too deep"))
    }

    /// libbpf's `bpf_core_types_are_compat`.
    pub(super) fn types_compat(
        &mut self,
        mut lid: u32,
        mut tid: u32,
        level: u32,
    ) -> Result<bool, Fail> {
        if !kinds_compat(&self.local.ty(lid), &self.targ.ty(tid)) {
            return Ok(false);
        }
        for _ in 0..COMPAT_LEVEL {
            self.tick()?;
            let (_, lt) = skip(self.local, lid)?;
            let (_, tt) = skip(self.targ, tid)?;
            if !kinds_compat(&lt, &tt) {
                return Ok(false);
            }
            let (Some(lt), Some(tt)) = (lt, tt) else {
                // Both void.
                return Ok(true);
            };
            match lt.kind() {
                Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 | Kind::Fwd => {
                    return Ok(true)
                }
                Kind::Int => {
                    let lo = lt.int().map_or(0, |i| i.offset);
                    let to = tt.int().map_or(0, |i| i.offset);
                    return Ok(lo == 0 && to == 0);
                }
                Kind::Ptr => {
                    lid = lt.size_or_type();
                    tid = tt.size_or_type();
                }
                Kind::Array => {
                    lid = lt.array().map_or(0, |a| a.elem_type);
                    tid = tt.array().map_or(0, |a| a.elem_type);
                }
                Kind::FuncProto => {
                    if lt.vlen() != tt.vlen() {
                        return Ok(false);
                    }
                    for (lp, tp) in lt.params().zip(tt.params()) {
                        if level == 0 {
                            return Err(Fail::Hard("function prototypes nest too deep"));
                        }
                        let (l, _) = skip(self.local, lp.type_id)?;
                        let (t, _) = skip(self.targ, tp.type_id)?;
                        if !self.types_compat(l, t, level - 1)? {
                            return Ok(false);
                        }
                    }
                    lid = skip(self.local, lt.size_or_type())?.0;
                    tid = skip(self.targ, tt.size_or_type())?.0;
                }
                _ => return Ok(false),
            }
        }
        Err(Fail::Hard("type nesting too deep"))
    }

    pub(super) fn names_match(&self, l: &[u8], t: &[u8]) -> bool {
        l.is_empty() || t.is_empty() || essential(l) == essential(t)
    }

    /// libbpf's `__bpf_core_types_match`.
    pub(super) fn types_match(
        &mut self,
        mut lid: u32,
        mut tid: u32,
        mut behind_ptr: bool,
        level: u32,
    ) -> Result<bool, Fail> {
        if level == 0 {
            return Err(Fail::Hard("types nest too deep"));
        }
        for _ in 0..COMPAT_LEVEL {
            self.tick()?;
            let (_, lt) = skip(self.local, lid)?;
            let (_, tt) = skip(self.targ, tid)?;
            let lname = lt.map(|t| t.name_bytes()).unwrap_or_default();
            let tname = tt.map(|t| t.name_bytes()).unwrap_or_default();
            if !self.names_match(lname, tname) {
                return Ok(false);
            }
            let (lk, tk) = (kind_num(&lt), kind_num(&tt));
            let (Some(lt), Some(tt_)) = (lt, tt) else {
                return Ok(lk == tk);
            };
            let tkind = tt_.kind();
            match lt.kind() {
                Kind::Fwd => {
                    let lf = lt.kind_flag();
                    return Ok(if behind_ptr {
                        if lk == tk {
                            lf == tt_.kind_flag()
                        } else {
                            (tkind == Kind::Struct && !lf) || (tkind == Kind::Union && lf)
                        }
                    } else {
                        lk == tk && lf == tt_.kind_flag()
                    });
                }
                Kind::Enum | Kind::Enum64 => {
                    if !tkind.is_any_enum() {
                        return Ok(false);
                    }
                    return Ok(self.enums_match(&lt, &tt_));
                }
                Kind::Struct | Kind::Union => {
                    if behind_ptr {
                        if lk == tk {
                            return Ok(true);
                        }
                        if tkind != Kind::Fwd {
                            return Ok(false);
                        }
                        return Ok((lt.kind() == Kind::Union) == tt_.kind_flag());
                    }
                    if lk != tk {
                        return Ok(false);
                    }
                    return self.composites_match(&lt, &tt_, behind_ptr, level);
                }
                Kind::Int => {
                    if lk != tk {
                        return Ok(false);
                    }
                    let ls = lt.int().is_some_and(|i| i.is_signed());
                    let ts = tt_.int().is_some_and(|i| i.is_signed());
                    return Ok(lt.size_or_type() == tt_.size_or_type() && ls == ts);
                }
                Kind::Ptr => {
                    if lk != tk {
                        return Ok(false);
                    }
                    behind_ptr = true;
                    lid = lt.size_or_type();
                    tid = tt_.size_or_type();
                }
                Kind::Array => {
                    let (Some(la), Some(ta)) = (lt.array(), tt_.array()) else {
                        return Ok(false);
                    };
                    if la.nelems != ta.nelems {
                        return Ok(false);
                    }
                    lid = la.elem_type;
                    tid = ta.elem_type;
                }
                Kind::FuncProto => {
                    if lk != tk || lt.vlen() != tt_.vlen() {
                        return Ok(false);
                    }
                    for (lp, tp) in lt.params().zip(tt_.params()) {
                        if !self.types_match(lp.type_id, tp.type_id, behind_ptr, level - 1)? {
                            return Ok(false);
                        }
                    }
                    lid = lt.size_or_type();
                    tid = tt_.size_or_type();
                }
                _ => return Ok(false),
            }
        }
        Err(Fail::Hard("type nesting too deep"))
    }

    pub(super) fn enums_match(&mut self, lt: &Type<'_>, tt: &Type<'_>) -> bool {
        if lt.size_or_type() != tt.size_or_type() || lt.vlen() > tt.vlen() {
            return false;
        }
        lt.enum_values().all(|lv| {
            let ln = essential(lv.name.as_bytes());
            tt.enum_values().any(|tv| {
                let tn = tv.name.as_bytes();
                !tn.is_empty() && essential(tn) == ln
            })
        })
    }

    pub(super) fn composites_match(
        &mut self,
        lt: &Type<'_>,
        tt: &Type<'_>,
        behind_ptr: bool,
        level: u32,
    ) -> Result<bool, Fail> {
        if lt.vlen() > tt.vlen() {
            return Ok(false);
        }
        for lm in lt.members() {
            let mut matched = false;
            for tm in tt.members() {
                self.tick()?;
                if !self.names_match(lm.name.as_bytes(), tm.name.as_bytes()) {
                    continue;
                }
                if self.types_match(lm.type_id, tm.type_id, behind_ptr, level - 1)? {
                    matched = true;
                    break;
                }
            }
            if !matched {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// libbpf's `bpf_core_match_member`: finds the local accessor's member in target
    /// composite `tid`, looking into anonymous members.
    pub(super) fn match_member(
        &mut self,
        local_acc: &Acc<'_>,
        tid: u32,
        spec: &mut Spec<'t>,
        raw: &mut [u32; MAX_SPEC_LEN],
        next: &mut u32,
    ) -> Result<bool, Fail> {
        self.tick()?;
        let (tid, tt) = skip(self.targ, tid)?;
        let Some(tt) = tt.filter(|t| t.kind().is_composite()) else {
            return Ok(false);
        };
        let lt = self
            .local
            .ty(local_acc.type_id)
            .ok_or(Fail::Hard("local accessor type out of range"))?;
        let lm = lt
            .member(local_acc.idx)
            .ok_or(Fail::Hard("local member index out of range"))?;
        let lname = self.local.string_bytes(lm.name_off);
        for (i, m) in tt.members().enumerate() {
            if spec.raw_len >= MAX_SPEC_LEN {
                return Err(Fail::Hard("access path too long"));
            }
            spec.bit_offset += u64::from(m.bit_offset);
            if let Some(slot) = raw.get_mut(spec.raw_len) {
                *slot = i as u32;
            }
            spec.raw_len += 1;
            let tname = self.targ.string_bytes(m.name_off);
            if tname.is_empty() {
                if self.match_member(local_acc, m.type_id, spec, raw, next)? {
                    return Ok(true);
                }
            } else if tname == lname {
                spec.push(Acc {
                    type_id: tid,
                    idx: i as u32,
                    name: Some(tname),
                })?;
                *next = m.type_id;
                let ok = self.fields_compat(lm.type_id, m.type_id)?;
                if !ok {
                    spec.len -= 1;
                }
                return Ok(ok);
            }
            spec.bit_offset -= u64::from(m.bit_offset);
            spec.raw_len -= 1;
        }
        Ok(false)
    }

    /// libbpf's `bpf_core_spec_match`: `Some(target spec)` when candidate `tid` matches.
    pub(super) fn spec_match(
        &mut self,
        local: &Spec<'l>,
        kind: CoreReloKind,
        tid: u32,
    ) -> Result<Option<Spec<'t>>, Fail> {
        let mut ts = Spec::new(tid);
        if kind.is_type_based() {
            let ok = if kind == CoreReloKind::TypeMatches {
                self.types_match(local.root, tid, false, COMPAT_LEVEL)?
            } else {
                self.types_compat(local.root, tid, COMPAT_LEVEL)?
            };
            return Ok(ok.then_some(ts));
        }
        let first = *local.get(0).ok_or(Fail::Hard("empty spec"))?;
        if kind.is_enumval_based() {
            let (tid, tt) = skip(self.targ, tid)?;
            let Some(tt) = tt.filter(|t| t.kind().is_any_enum()) else {
                return Ok(None);
            };
            let ln = essential(first.name.unwrap_or_default());
            for (i, v) in tt.enum_values().enumerate() {
                let tn = self.targ.string_bytes(v.name_off);
                if essential(tn) == ln {
                    ts.push(Acc {
                        type_id: tid,
                        idx: i as u32,
                        name: Some(tn),
                    })?;
                    ts.raw_len = 1;
                    return Ok(Some(ts));
                }
            }
            return Ok(None);
        }
        if !kind.is_field_based() {
            return Err(Fail::Hard("unknown relocation kind"));
        }
        let mut raw = [0u32; MAX_SPEC_LEN];
        let mut tid = tid;
        for i in 0..local.len {
            let la = *local.get(i).ok_or(Fail::Hard("spec index"))?;
            let (rid, tt) = skip(self.targ, tid)?;
            tid = rid;
            if la.name.is_some() {
                let mut next = 0;
                if !self.match_member(&la, tid, &mut ts, &mut raw, &mut next)? {
                    return Ok(None);
                }
                tid = next;
            } else {
                if i > 0 {
                    let Some(a) = tt.and_then(|t| t.array()) else {
                        return Ok(None);
                    };
                    let flex = is_flex_arr(self.targ, ts.last(), a.nelems);
                    if !flex && la.idx >= a.nelems {
                        return Ok(None);
                    }
                    tid = skip(self.targ, a.elem_type)?.0;
                }
                if ts.raw_len >= MAX_SPEC_LEN {
                    return Err(Fail::Hard("access path too long"));
                }
                ts.push(Acc {
                    type_id: tid,
                    idx: la.idx,
                    name: None,
                })?;
                if let Some(slot) = raw.get_mut(ts.raw_len) {
                    *slot = la.idx;
                }
                ts.raw_len += 1;
                let sz = self.targ.size_of(tid)?;
                ts.bit_offset += u64::from(la.idx) * u64::from(sz) * 8;
            }
        }
        Ok(Some(ts))
    }
}
