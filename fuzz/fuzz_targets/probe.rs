//! Fuzz the section-name grammar: section names come from untrusted ELF objects.
//!
//! Every input is tried as UTF-8 when it is, and always through a lossy conversion (so any
//! byte string reaches the parser). Properties checked:
//! - `parse` and `program_type` never panic;
//! - an error's column lies inside the input;
//! - a parsed probe renders to a name that parses back to an equal probe, and that
//!   rendering is a fixed point;
//! - every argument renders (perf style) without panicking;
//! - `validate` (the open phase's check, with its fast path for common names) accepts
//!   exactly what `parse` accepts, with the same error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::probe::{parse, program_type, validate, Section};

fn check(s: &str) {
    let _ = program_type(s);
    assert_eq!(
        validate(s),
        parse(s).map(|_| ()),
        "validate vs parse on {s:?}"
    );
    match parse(s) {
        Err(e) => {
            assert!(
                e.column as usize <= s.len(),
                "column {} past the end of {s:?}",
                e.column
            );
            let _ = e.to_string();
        }
        Ok(Section::Title(t)) => assert_eq!(t, s),
        Ok(Section::Probe(p)) => {
            for arg in p.args().exprs() {
                let _ = arg.to_string();
            }
            let text = p.to_string();
            match parse(&text) {
                Ok(Section::Probe(q)) => {
                    assert_eq!(p, q, "{s:?} rendered as {text:?}");
                    assert_eq!(
                        q.to_string(),
                        text,
                        "{s:?}: canonical form is not a fixed point"
                    );
                }
                other => panic!("{s:?} rendered as {text:?}, which parses as {other:?}"),
            };
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = core::str::from_utf8(data) {
        check(s);
    } else {
        check(&String::from_utf8_lossy(data));
    }
});
