//! Kernel tests of programs sharing a tracepoint: a session finds the programs another
//! session (here: another set of links of this process, which the kernel cannot tell from
//! another process) put on its tracepoint and names them by id and name; two of its own
//! programs on one tracepoint are reported as such. Oracle: the kernel's ids of the
//! programs loaded (`BPF_OBJ_GET_INFO_BY_FD`). The filter (`tests/bpf/shared_tp.c`)
//! accepts every hit, on a tracepoint few programs use, so it takes nothing from other
//! readers.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Mutex;

use sluice_runtime::attach::ForeignProgram;
use sluice_runtime::session::{ObjectSource, Session, SessionOptions};

static SERIAL: Mutex<()> = Mutex::new(());

const EVENT: &str = "syscalls:sys_enter_getpriority";

fn object() -> ObjectSource {
    ObjectSource {
        name: "shared_tp.o".into(),
        bytes: common::fixture("shared_tp.o"),
    }
}

fn prog_id(s: &Session) -> u32 {
    s.objects()[0].programs()[0].info().unwrap().id
}

#[test]
fn another_program_on_our_tracepoint_is_named() {
    if !common::kernel("another_program_on_our_tracepoint_is_named") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let opts = SessionOptions::default();
    let first = Session::start(&[object()], &opts).expect("first session");
    let first_id = prog_id(&first);
    let second = Session::start(&[object()], &opts).expect("second session");
    let second_id = prog_id(&second);
    assert_ne!(first_id, second_id);
    let shared: Vec<_> = second
        .shared()
        .iter()
        .filter(|s| s.event == EVENT)
        .collect();
    assert_eq!(shared.len(), 1, "{:?}", second.shared());
    let s = shared[0];
    assert!(
        s.others.contains(&ForeignProgram {
            id: first_id,
            name: Some("shared_accept".into())
        }),
        "{s:?}"
    );
    assert!(
        !s.others.iter().any(|o| o.id == second_id),
        "our own program is not another's: {s:?}"
    );
    let w = s.warning();
    eprintln!("warning: {w}");
    assert!(
        w.contains(&format!("id {first_id} 'shared_accept'")) && w.contains(EVENT),
        "{w}"
    );
    assert!(w.contains("drops the sample for every reader"), "{w}");
    // The first session started alone: nobody else's program unless another run of the
    // machine uses the tracepoint too; ours is never listed as another's.
    assert!(first
        .shared()
        .iter()
        .all(|s| !s.others.iter().any(|o| o.id == first_id)));
    drop(second);
    drop(first);
}

#[test]
fn two_of_our_programs_on_one_tracepoint_are_reported() {
    if !common::kernel("two_of_our_programs_on_one_tracepoint_are_reported") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Session::start(&[object(), object()], &SessionOptions::default()).expect("session");
    let shared: Vec<_> = s.shared().iter().filter(|x| x.event == EVENT).collect();
    assert_eq!(
        shared.len(),
        1,
        "one report per tracepoint: {:?}",
        s.shared()
    );
    assert_eq!(
        shared[0].ours,
        ["shared_tp.o: shared_accept", "shared_tp.o: shared_accept"]
    );
    let w = shared[0].warning();
    eprintln!("warning: {w}");
    assert!(
        w.contains(&format!("{EVENT} carries 2 programs of this run")),
        "{w}"
    );
    assert!(w.contains("recorded once per program of this run"), "{w}");
}
