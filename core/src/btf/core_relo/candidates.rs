//! Target candidates: names without their `___flavour` suffix, and the target's named types
//! sorted by that name ([`CandidateIndex`]).

use crate::btf::error::{BtfError, BtfResult};
use crate::btf::types::Strings;
use crate::btf::Btf;

/// Length of `name` without its `___flavour` suffix (libbpf's
/// `bpf_core_essential_name_len`): the last `X___Y` with X and Y not `_` ends the name
/// after X.
#[must_use]
pub fn essential_name_len(name: &[u8]) -> usize {
    let n = name.len();
    let mut i = n.saturating_sub(5);
    // i goes from n-5 down to 0 (none when n < 5).
    if n >= 5 {
        loop {
            if let Some(&[x, b'_', b'_', b'_', y]) = name.get(i..i + 5) {
                if x != b'_' && y != b'_' {
                    return i + 1;
                }
            }
            if i == 0 {
                break;
            }
            i -= 1;
        }
    }
    n
}

pub(super) fn essential(name: &[u8]) -> &[u8] {
    name.get(..essential_name_len(name)).unwrap_or(name)
}

/// One named type of a target BTF in a [`CandidateIndex`]: its id and where its essential
/// name lies in the string section, so sorting and lookup compare bytes in place instead of
/// decoding the type and scanning its name again at every comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Candidate {
    id: u32,
    name_off: u32,
    name_len: u32,
}

/// The named types of a target BTF sorted by essential name, for O(log n) candidate
/// lookup.
#[derive(Clone, Copy, Debug)]
pub struct CandidateIndex<'t> {
    btf: Btf<'t>,
    sorted: &'t [Candidate],
}

impl<'t> CandidateIndex<'t> {
    /// Entries the scratch buffer of [`CandidateIndex::new`] needs: the number of named
    /// types of `btf`.
    #[must_use]
    pub fn required_len(btf: &Btf<'_>) -> usize {
        btf.types().filter(|t| t.name_off() != 0).count()
    }

    /// Sorts the named types of `btf` into `scratch` (at least
    /// [`CandidateIndex::required_len`] entries).
    ///
    /// # Errors
    /// [`BtfError::Capacity`] when `scratch` is too short.
    pub fn new(btf: Btf<'t>, scratch: &'t mut [Candidate]) -> BtfResult<Self> {
        Self::fill(btf, &Wanted::All, scratch)
    }

    /// Entries the scratch buffer of [`CandidateIndex::for_names`] needs: the types of
    /// `btf` named as one of `wanted` ([`CandidateIndex::wanted`]).
    #[must_use]
    pub fn required_len_for(btf: &Btf<'_>, wanted: &[&[u8]]) -> usize {
        kept(btf, &Wanted::some(wanted)).count()
    }

    /// Makes `names` (local type names) the `wanted` of [`CandidateIndex::for_names`]:
    /// their essential names, sorted.
    pub fn wanted(names: &mut [&[u8]]) {
        for n in names.iter_mut() {
            *n = essential(n);
        }
        names.sort_unstable();
    }

    /// Like [`CandidateIndex::new`], but indexes only the types whose essential name is
    /// in `wanted` ([`CandidateIndex::wanted`]): every root type name of the relocations
    /// to resolve (a lookup of any other name finds nothing). An object's relocations
    /// name a few dozen types of the kernel's 150 000: the index is then a few entries,
    /// found in one pass instead of sorting every name.
    ///
    /// # Errors
    /// [`BtfError::Capacity`] when `scratch` is shorter than
    /// [`CandidateIndex::required_len_for`].
    pub fn for_names(
        btf: Btf<'t>,
        wanted: &[&[u8]],
        scratch: &'t mut [Candidate],
    ) -> BtfResult<Self> {
        Self::fill(btf, &Wanted::some(wanted), scratch)
    }

    fn fill(btf: Btf<'t>, wanted: &Wanted<'_>, scratch: &'t mut [Candidate]) -> BtfResult<Self> {
        let limit = u32::try_from(scratch.len()).unwrap_or(u32::MAX);
        let mut n = 0usize;
        for c in kept(&btf, wanted) {
            let slot = scratch.get_mut(n).ok_or(BtfError::Capacity {
                what: "named target types (CO-RE candidate index)",
                limit,
            })?;
            *slot = c;
            n += 1;
        }
        let sorted = scratch.get_mut(..n).unwrap_or_default();
        let strings = btf.strs();
        sorted.sort_unstable_by(|a, b| key(strings, a).cmp(key(strings, b)).then(a.id.cmp(&b.id)));
        Ok(CandidateIndex { btf, sorted })
    }

    /// The target BTF.
    #[must_use]
    pub fn btf(&self) -> &Btf<'t> {
        &self.btf
    }

    /// Ids of the target types whose essential name is `essential_name`, in id order.
    pub fn by_essential_name<'s>(
        &'s self,
        essential_name: &'s [u8],
    ) -> impl Iterator<Item = u32> + 's {
        let strings = self.btf.strs();
        let start = self
            .sorted
            .partition_point(|c| key(strings, c) < essential_name);
        self.sorted
            .get(start..)
            .unwrap_or_default()
            .iter()
            .take_while(move |c| key(strings, c) == essential_name)
            .map(|c| c.id)
    }
}

/// Which target names an index keeps.
enum Wanted<'w> {
    All,
    /// Sorted essential names, and a bitmap of their first bytes (a cheap test that
    /// rejects most names before their essential name is computed).
    Some(&'w [&'w [u8]], [u64; 4]),
}

impl<'w> Wanted<'w> {
    fn some(names: &'w [&'w [u8]]) -> Self {
        let mut first = [0u64; 4];
        for b in names.iter().filter_map(|n| n.first()) {
            if let Some(w) = first.get_mut(usize::from(b >> 6)) {
                *w |= 1 << (b & 63);
            }
        }
        Wanted::Some(names, first)
    }

    /// Whether a name starting with `b` may be kept (before the name is even measured).
    fn may_keep(&self, b: u8) -> bool {
        match self {
            Wanted::All => true,
            Wanted::Some(_, first) => {
                first
                    .get(usize::from(b >> 6))
                    .map_or(0, |w| w >> (b & 63) & 1)
                    != 0
            }
        }
    }

    /// Whether the essential name `e` is kept.
    fn keeps(&self, e: &[u8]) -> bool {
        match self {
            Wanted::All => true,
            Wanted::Some(names, _) => names.binary_search(&e).is_ok(),
        }
    }
}

/// The named types of `btf` that `wanted` keeps, as index entries, in id order. Headers
/// are read in place (no [`crate::btf::Type`] built), and a name is measured only when its
/// first byte may start a wanted one.
fn kept<'b>(btf: &'b Btf<'_>, wanted: &'b Wanted<'_>) -> impl Iterator<Item = Candidate> + 'b {
    let strings = btf.strs();
    (1..=btf.type_count()).filter_map(move |id| {
        let name_off = btf.raw(id)?.name_off(btf);
        if name_off == 0 || !wanted.may_keep(*strings.tail(name_off).first()?) {
            return None;
        }
        let name = strings.bytes(name_off);
        if name.is_empty() {
            return None;
        }
        let len = essential_name_len(name);
        let e = name.get(..len)?;
        // A name is shorter than the section, whose size is a u32.
        let name_len = u32::try_from(len).ok()?;
        wanted.keeps(e).then_some(Candidate {
            id,
            name_off,
            name_len,
        })
    })
}

/// The essential name of `c`: its bytes in the string section, found by offset and length.
fn key<'a>(strings: Strings<'a>, c: &Candidate) -> &'a [u8] {
    strings
        .tail(c.name_off)
        .get(..c.name_len as usize)
        .unwrap_or_default()
}
