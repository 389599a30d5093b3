//! Helpers of the CLI tests: run the built `sluice`, find fixtures, skip loudly.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the built `sluice` with `args`: exit code (-1 when killed by a signal), stdout,
/// stderr.
pub fn sluice(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The repository's root (the workspace above `cli/`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The path of fixture `tests/bpf/NAME`, as an argument.
pub fn fixture(name: &str) -> String {
    repo().join("tests/bpf").join(name).display().to_string()
}

/// Whether a missing tool or kernel feature must fail the test (`SLUICE_REQUIRE_KERNEL=1`).
pub fn required() -> bool {
    std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() == Ok("1")
}

/// Says why a test does not run, or fails when [`required`].
pub fn skip(what: &str) {
    assert!(!required(), "{what} (SLUICE_REQUIRE_KERNEL=1)");
    eprintln!("SKIPPED: {what}");
}

/// The tracefs mount (sluice mounts it when needed).
pub fn tracefs() -> PathBuf {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("uprobe_events").exists())
        .expect("tracefs mounted (sluice mounts it when needed)")
}

/// Lines of uprobe_events naming a sluice event made by `pid`.
pub fn probes_of(pid: u32) -> Vec<String> {
    let text = std::fs::read_to_string(tracefs().join("uprobe_events")).unwrap();
    let tag = format!("sluice/p_{pid}_");
    text.lines()
        .filter(|l| l.contains(&tag))
        .map(str::to_owned)
        .collect()
}

/// The text between `"key":` and the closing bracket `close` in a `record --json` line.
pub fn json_member<'a>(line: &'a str, key: &str, close: char) -> &'a str {
    let k = format!("\"{key}\":");
    let at = line
        .find(&k)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + k.len();
    let rest = &line[at..];
    &rest[..=rest.find(close).unwrap()]
}

/// A scratch folder for one record test, `sluice-record-WHAT-PID-CC-OOPT`, or `None` after
/// saying why when not root (recording needs it).
pub fn record_dir(what: &str, cc: &str, opt: &str) -> Option<PathBuf> {
    if !rustix::process::geteuid().is_root() {
        skip("recording probes needs root");
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "sluice-record-{what}-{}-{cc}-O{opt}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    Some(dir)
}

/// Runs `cc ARGS`, or says why not (clang is optional unless the tests are required).
pub fn compile(cc: &str, args: &[&str]) -> bool {
    let ok = Command::new(cc)
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if cc == "clang" && !required() {
            eprintln!("SKIPPED: clang is not installed (CI installs it)");
        } else {
            skip(&format!("{cc} is needed to build the probed program"));
        }
    }
    ok
}

/// `tests/dwarf/NAME.c` built `-g -O{opt} -no-pie` by `cc` into `dir` (one binary per
/// test: tests never probe the same file at once), or `None` after saying why.
pub fn build_traced(cc: &str, opt: &str, dir: &Path, name: &str) -> Option<PathBuf> {
    let bin = dir.join(format!("{name}_{cc}_O{opt}"));
    let src = repo().join(format!("tests/dwarf/{name}.c"));
    let (b, s) = (bin.display().to_string(), src.display().to_string());
    compile(cc, &["-g", &format!("-O{opt}"), "-no-pie", "-o", &b, &s]).then_some(bin)
}

/// `sluice record --json -e dwarf_words.o --event p_words=SPEC -- sh -c WORKLOAD`, checked:
/// exit 0, `probes` probes removed, no sample left without its program's output. Stdout.
pub fn record_words(spec: &str, workload: &str, probes: usize, label: &str) -> String {
    record_words_at(&[spec], workload, probes, label)
}

/// [`record_words`] with `--event p_words=SPEC` once for each of `specs` (`@FILE` too).
pub fn record_words_at(specs: &[&str], workload: &str, probes: usize, label: &str) -> String {
    let fixture = fixture("dwarf_words.o");
    let events: Vec<String> = specs.iter().map(|s| format!("p_words={s}")).collect();
    let mut args = vec!["record", "--json", "-e", &fixture];
    for e in &events {
        args.extend(["--event", e.as_str()]);
    }
    args.extend(["--", "sh", "-c", workload]);
    let (code, out, err) = sluice(&args);
    assert_eq!(code, 0, "{label}: {err}");
    assert!(
        err.contains(&format!("probes removed {probes}")),
        "{label}: {err}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("{\"type\":\"sample\"")),
        "{label}: a sample left unpaired:\n{out}"
    );
    out
}

/// A hit as a `{"type":"pair"}` line of `record --json` shows it: the sample's IP, the
/// kernel's fetch-arg values in order (`__probe_ip` left out), the words the program sent.
pub struct PairHit {
    /// The probed address (`"ip"`).
    pub ip: u64,
    /// The fetch-args' values, as printed.
    pub fields: Vec<String>,
    /// The program's words, as printed.
    pub words: Vec<String>,
}

/// The [`PairHit`] of a pair line.
pub fn pair_hit(line: &str) -> PairHit {
    let ip = json_member(line, "ip", ',').trim_matches(|c| c == '"' || c == ',');
    let ip = u64::from_str_radix(ip.trim_start_matches("0x"), 16).unwrap();
    let fields = json_member(line, "fields", '}')
        .trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("\"__probe_ip\""))
        .map(|kv| kv.split_once(':').unwrap().1.to_owned())
        .collect();
    let words = json_member(line, "words", ']')
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(str::to_owned)
        .collect();
    PairHit { ip, fields, words }
}
