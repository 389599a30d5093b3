//! More than four arguments and strings (issue 14, item 4): the first four scalar values
//! go to the program in r2..r5, the fifth and the string are recorded by the kernel's
//! fetch-args beside the sample and printed with it; `prologue` says which is which.
//! Oracle: the traced program's own arguments (the i-th call passes i, 2i, 3i, 4i, 5i and
//! "call-i"); the filter (`tests/bpf/many_args.c`) accepts a call only when the four values
//! it was passed are i, 2i, 3i, 4i with i even, so the samples also prove what r2..r5 held.
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

const CALLS: i64 = 10;

fn traced(dir: &std::path::Path, debug: bool) -> Option<PathBuf> {
    let bin = dir.join(if debug { "many_args_g" } else { "many_args" });
    let src = common::repo().join("tests/record/many_args.c");
    let (b, s) = (bin.display().to_string(), src.display().to_string());
    let mut args = vec!["-O1", "-o", &b, &s];
    if debug {
        args.insert(0, "-g");
    }
    common::compile("cc", &args).then_some(bin)
}

/// `(i, e, s)` of every sample line: `a` or `arg1`, `e`, and the string field.
fn hits(out: &str, first: &str, string: &str) -> Vec<(i64, i64, String)> {
    out.lines()
        .filter(|l| l.contains("many_args_target"))
        .map(|l| {
            let field = |k: &str| {
                let at = l
                    .find(&format!(" {k}="))
                    .unwrap_or_else(|| panic!("no {k} in {l}"));
                l[at + k.len() + 2..].split(' ').next().unwrap().to_owned()
            };
            (
                field(first).parse().unwrap(),
                field("e").parse().unwrap(),
                field(string).trim_matches('"').to_owned(),
            )
        })
        .collect()
}

fn want() -> Vec<(i64, i64, String)> {
    (0..CALLS)
        .filter(|i| i % 2 == 0)
        .map(|i| (i, 5 * i, format!("call-{i}")))
        .collect()
}

#[test]
fn six_arguments_four_passed_a_fifth_and_a_string_recorded() {
    let Some(dir) = common::record_dir("many-args", "cc", "1") else {
        return;
    };
    let Some(bin) = traced(&dir, false) else {
        return;
    };
    let obj = common::fixture("many_args.o");
    let spec = format!(
        "uprobe/{}:many_args_target(%di:s64, %si:s64, %dx:s64, %cx:s64, e=%r8:s64, \
         s=+0(%r9):string)",
        bin.display()
    );
    let event = format!("many_args_even={spec}");
    let n = CALLS.to_string();
    let (code, out, err) = common::sluice(&[
        "record",
        "-e",
        &obj,
        "--event",
        &event,
        "--",
        &bin.display().to_string(),
        &n,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("probes removed 1"), "{err}");
    assert_eq!(hits(&out, "arg1", "s"), want(), "{out}");

    // `prologue` lists what is passed and what only recorded.
    let (code, text, err) = common::sluice(&["prologue", &spec]);
    assert_eq!(code, 0, "{err}");
    for line in [
        "  r2: arg1=%di:s64",
        "  r5: arg4=%cx:s64",
        "  recorded only: e=%r8:s64",
        "  recorded only: s=+0(%r9):string",
    ] {
        assert!(text.lines().any(|l| l == line), "no '{line}' in:\n{text}");
    }
    assert!(!text.contains("r6: "), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn debug_info_arguments_past_the_fourth_and_strings_are_recorded() {
    let Some(dir) = common::record_dir("many-args-dwarf", "cc", "1") else {
        return;
    };
    let Some(bin) = traced(&dir, true) else {
        return;
    };
    let obj = common::fixture("many_args.o");
    let spec = format!(
        "uprobe/{}:many_args_target(a, b, c, d, e, s:string)",
        bin.display()
    );
    let event = format!("many_args_even={spec}");
    let n = CALLS.to_string();
    let (code, out, err) = common::sluice(&[
        "record",
        "-e",
        &obj,
        "--event",
        &event,
        "--",
        &bin.display().to_string(),
        &n,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(hits(&out, "a", "s_string"), want(), "{out}");
    let (code, text, err) = common::sluice(&["prologue", &spec]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.lines()
            .any(|l| l == "passed in r2..r5: a b c d; recorded only: e s_string"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
