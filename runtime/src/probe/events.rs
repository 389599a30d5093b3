//! `--event PROG=SPEC`, given any number of times: the probe specs that replace section
//! names, by program. A program named more than once is attached at each of its specs
//! (one loaded program per spec, as a DWARF spec with several sites gets one per site):
//! the specs `sluice prologue --emit` writes for the inlined instances of a function,
//! given back one `--event` each.

/// The specs given to programs, in the order given ([`EventSpecs::insert`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventSpecs {
    /// `(program, spec)`, each pair once.
    pairs: Vec<(String, String)>,
}

impl EventSpecs {
    /// No spec given.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `spec` to the specs of `program` (its function name, else its section name):
    /// one more place it is attached at. The same spec given twice for one program is kept
    /// once (it would only double every sample).
    pub fn insert(&mut self, program: String, spec: String) {
        if !self.pairs.iter().any(|(p, s)| *p == program && *s == spec) {
            self.pairs.push((program, spec));
        }
    }

    /// The specs given to `program`, in the order given.
    pub fn specs_of<'a>(&'a self, program: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs
            .iter()
            .filter(move |(p, _)| p == program)
            .map(|(_, s)| s.as_str())
    }

    /// The programs given a spec, each once, in the order first given.
    #[must_use]
    pub fn programs(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (p, _) in &self.pairs {
            if !out.contains(&p.as_str()) {
                out.push(p);
            }
        }
        out
    }

    /// Whether no spec was given.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_keeps_every_spec_given_once_each() {
        let mut e = EventSpecs::new();
        assert!(e.is_empty());
        e.insert("p".into(), "uprobe//bin/x:0x10".into());
        e.insert("q".into(), "kprobe/f".into());
        e.insert("p".into(), "uprobe//bin/x:0x20".into());
        e.insert("p".into(), "uprobe//bin/x:0x10".into());
        assert_eq!(
            e.specs_of("p").collect::<Vec<_>>(),
            ["uprobe//bin/x:0x10", "uprobe//bin/x:0x20"]
        );
        assert_eq!(e.specs_of("q").collect::<Vec<_>>(), ["kprobe/f"]);
        assert_eq!(e.specs_of("r").count(), 0);
        assert_eq!(e.programs(), ["p", "q"]);
    }
}
