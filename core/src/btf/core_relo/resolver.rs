//! Resolution of one relocation: the local spec, every candidate matched, both sides'
//! values computed and the candidates' agreement checked ([`CoreResolver`]).

use super::candidates::{essential, CandidateIndex};
use super::kind::CoreReloKind;
use super::matcher::Matcher;
use super::spec::{kinds_compat, parse_spec, Fail, Spec};
use super::value::{calc_enum, calc_field, calc_type, Val};
use crate::btf::error::{BtfError, BtfResult, ErrName};
use crate::btf::ext::CoreRelo;
use crate::btf::types::{Kind, Type, INT_SIGNED};
use crate::btf::Btf;

/// The outcome of one relocation (libbpf's `bpf_core_relo_res`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreResult {
    /// Index of the relocation (as given to [`CoreResolver::resolve`]).
    pub index: u32,
    /// Instruction index in its section (`insn_off / 8`).
    pub insn: u32,
    /// What was computed.
    pub kind: CoreReloKind,
    /// The value computed on the local BTF (what the compiler put in the instruction).
    pub orig_val: u64,
    /// The value for the target.
    pub new_val: u64,
    /// `Some(reason)`: the instruction must be poisoned; the reason names the access string.
    pub poison: Option<BtfError>,
    /// Whether the instruction must currently hold `orig_val` (bitfields and type ids are
    /// not checked).
    pub validate: bool,
    /// Local field size for LDX/ST/STX size adjustment (0 when not a plain field offset).
    pub orig_size: u32,
    /// Target field size.
    pub new_size: u32,
    /// The field changed size in a way a load cannot follow (signed integer, struct ...):
    /// LDX/ST/STX instructions are poisoned.
    pub fail_memsz_adjust: bool,
    /// The matching target type (root of the first matching candidate), 0 when none.
    pub target_type_id: u32,
    /// How many candidates matched.
    pub matched: u32,
    /// The local root type's name, for messages.
    pub type_name: ErrName,
    /// The access string, for messages.
    pub access: ErrName,
}

/// Resolves CO-RE relocations of one object (`local`) against a target BTF.
#[derive(Clone, Copy, Debug)]
pub struct CoreResolver<'x, 'l, 't> {
    local: &'x Btf<'l>,
    targets: &'x CandidateIndex<'t>,
}

impl<'x, 'l, 't> CoreResolver<'x, 'l, 't> {
    /// A resolver for relocations of `local` against the target in `targets`.
    #[must_use]
    pub fn new(local: &'x Btf<'l>, targets: &'x CandidateIndex<'t>) -> Self {
        CoreResolver { local, targets }
    }

    /// Computes relocation `relo` (number `index` of its section, for messages).
    ///
    /// A relocation whose target cannot be found is not an error: the result says
    /// `poison` (or 0 for the existence kinds).
    ///
    /// # Errors
    /// [`BtfError::CoreRelo`] naming the access string: unparsable access string,
    /// anonymous root type, ambiguous candidates, unknown kind, walks past their limits.
    pub fn resolve(&self, index: u32, relo: &CoreRelo) -> BtfResult<CoreResult> {
        let local = self.local;
        let targ = self.targets.btf();
        let access = local.string_bytes(relo.access_str_off);
        let lt = local.ty(relo.type_id);
        let type_name = ErrName::new(lt.map(|t| t.name_bytes()).unwrap_or(b"void"));
        let kind = relo.kind;
        let mut res = CoreResult {
            index,
            insn: relo.insn_off / 8,
            kind,
            orig_val: 0,
            new_val: 0,
            poison: None,
            validate: true,
            orig_size: 0,
            new_size: 0,
            fail_memsz_adjust: false,
            target_type_id: 0,
            matched: 0,
            type_name,
            access: ErrName::new(access),
        };
        let err = |what| BtfError::CoreRelo {
            index,
            insn: relo.insn_off / 8,
            ty: type_name,
            access: ErrName::new(access),
            what,
        };
        let hard = |f: Fail| match f {
            Fail::Hard(w) | Fail::Poison(w) => err(w),
        };
        if relo.type_id > local.type_count() {
            return Err(err("local type id out of range"));
        }
        if relo.insn_off % 8 != 0 {
            return Err(err("instruction offset not a multiple of 8"));
        }
        if let CoreReloKind::Unknown(_) = kind {
            return Err(err("unknown relocation kind"));
        }
        let local_spec = parse_spec(local, relo.type_id, kind, access).map_err(hard)?;
        if kind == CoreReloKind::TypeIdLocal {
            res.validate = false;
            res.orig_val = u64::from(relo.type_id);
            res.new_val = u64::from(relo.type_id);
            return Ok(res);
        }
        let lname = lt.map(|t| t.name_bytes()).unwrap_or_default();
        if lname.is_empty() {
            return Err(err("relocation against an anonymous type"));
        }
        let mut m = Matcher {
            local,
            targ,
            steps: 0,
        };
        let little = targ.endian().is_little();
        let mut first: Option<(Spec<'t>, CoreResult)> = None;
        for cand in self.targets.by_essential_name(essential(lname)) {
            if !kinds_compat(&lt, &targ.ty(cand)) {
                continue;
            }
            let Some(cs) = m.spec_match(&local_spec, kind, cand).map_err(hard)? else {
                continue;
            };
            let cr = calc(local, targ, kind, &local_spec, Some(&cs), little, res).map_err(hard)?;
            match &first {
                None => {
                    let mut cr = cr;
                    cr.target_type_id = cand;
                    first = Some((cs, cr));
                }
                Some((ts, tr)) => {
                    if cs.bit_offset != ts.bit_offset {
                        return Err(err("field offset ambiguity between candidates"));
                    }
                    if cr.poison.is_some() != tr.poison.is_some() || cr.new_val != tr.new_val {
                        return Err(err("relocation decision ambiguity between candidates"));
                    }
                }
            }
            res.matched += 1;
        }
        let matched = res.matched;
        let mut out = match first {
            Some((_, r)) => r,
            None => calc(local, targ, kind, &local_spec, None, little, res).map_err(hard)?,
        };
        out.matched = matched;
        Ok(out)
    }
}

/// libbpf's `bpf_core_calc_relo`.
fn calc(
    local: &Btf<'_>,
    targ: &Btf<'_>,
    kind: CoreReloKind,
    ls: &Spec<'_>,
    ts: Option<&Spec<'_>>,
    little: bool,
    mut res: CoreResult,
) -> Result<CoreResult, Fail> {
    let poison_of = |what| BtfError::CoreRelo {
        index: res.index,
        insn: res.insn,
        ty: res.type_name,
        access: res.access,
        what,
    };
    let (o, n) = if kind.is_field_based() {
        let o = calc_field(local, kind, Some(ls), little)?;
        match calc_field(targ, kind, ts, little) {
            Ok(n) => (o, n),
            Err(Fail::Poison(w)) => {
                res.poison = Some(poison_of(w));
                (o, Val::default())
            }
            Err(e) => return Err(e),
        }
    } else if kind.is_type_based() {
        (
            calc_type(local, kind, Some(ls.root))?,
            calc_type(targ, kind, ts.map(|s| s.root))?,
        )
    } else {
        let o = calc_enum(local, kind, Some(ls))?;
        match calc_enum(targ, kind, ts) {
            Ok(n) => (o, n),
            Err(Fail::Poison(w)) => {
                res.poison = Some(poison_of(w));
                (o, Val::default())
            }
            Err(e) => return Err(e),
        }
    };
    res.orig_val = o.val;
    res.new_val = n.val;
    res.validate = o.validate;
    res.orig_size = o.size;
    res.new_size = n.size;
    res.fail_memsz_adjust = false;
    if kind.is_field_based() && res.poison.is_none() && o.size != n.size {
        let ot = local.ty(o.type_id);
        let nt = targ.ty(n.type_id);
        let ptrs =
            ot.is_some_and(|t| t.kind() == Kind::Ptr) && nt.is_some_and(|t| t.kind() == Kind::Ptr);
        let unsigned = |t: Option<Type<'_>>| {
            t.and_then(|t| t.int())
                .is_some_and(|i| i.encoding != INT_SIGNED)
        };
        if !(ptrs || unsigned(ot) && unsigned(nt)) {
            res.fail_memsz_adjust = true;
        }
    }
    Ok(res)
}
