//! The map-create errno paths of [`Map::create`] and [`Map::freeze`] on the syscall fake
//! ([`crate::sys::fake`]): no kernel. The old-kernel paths set the kernel release the
//! runtime sees ([`fake::set_kernel_release`]), so they hold on any host.

use crate::error::Error;
use crate::load::{Map, MapExtra, MapSpec};
use crate::sys::fake::{self, Call, Cmd, Reply, Seen};
use rustix::io::Errno;
use sluice_core::perf::abi::{map_type, MapCreateAttr};
use std::cell::RefCell;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::Rc;

fn spec(map_type: u32) -> MapSpec {
    MapSpec {
        name: "counts".into(),
        map_type,
        key_size: 4,
        value_size: 8,
        max_entries: 16,
        map_flags: 0,
    }
}

/// The MAP_CREATE attrs the fake saw, in order.
type Creates = Rc<RefCell<Vec<MapCreateAttr>>>;

/// Installs a fake answering each MAP_CREATE with `answer(n, attr)` (n counts from 0),
/// and records the attrs.
fn fake_creates(
    answer: impl Fn(usize, &MapCreateAttr) -> Result<Reply, Errno> + 'static,
) -> (fake::Fake, Creates) {
    let creates: Creates = Rc::default();
    let seen = Rc::clone(&creates);
    let f = fake::install(move |call| match call {
        Call::Bpf(b) if b.cmd == Cmd::MapCreate => {
            let a = b.map_create().unwrap();
            let n = seen.borrow().len();
            seen.borrow_mut().push(a);
            answer(n, &a)
        }
        other => panic!("unexpected {other:?}"),
    });
    (f, creates)
}

fn refusal(spec: &MapSpec) -> Error {
    match Map::create(spec, None) {
        Ok(m) => panic!("created {m:?}"),
        Err(e) => e,
    }
}

/// Whether each attempt carried the map's name.
fn named(creates: &Creates) -> Vec<bool> {
    creates
        .borrow()
        .iter()
        .map(|a| a.map_name[0] != 0)
        .collect()
}

/// EPERM or EACCES: the permission error naming `bpf(BPF_MAP_CREATE)`, not retried.
#[test]
fn eperm_on_map_create_is_a_permission_error() {
    for errno in [Errno::PERM, Errno::ACCESS] {
        let (fake, creates) = fake_creates(move |_, _| Err(errno));
        let e = refusal(&spec(map_type::HASH));
        assert!(
            matches!(&e, Error::Permission { call: "bpf(BPF_MAP_CREATE)", errno: got, .. }
                if *got == errno),
            "{e:?}"
        );
        assert!(e.to_string().contains("CAP_BPF"), "{e}");
        assert_eq!(e.errno(), Some(errno));
        assert_eq!(fake.seen(), [Seen::Bpf(Cmd::MapCreate)]);
        let a = creates.borrow()[0];
        assert_eq!(
            (a.map_type, a.key_size, a.value_size, a.max_entries),
            (map_type::HASH, 4, 8, 16)
        );
        assert_eq!(&a.map_name[..7], b"counts\0");
    }
}

/// EINVAL on a kernel older than the map type: unsupported, naming the type and the
/// release it needs, after the nameless retry a pre-4.15 kernel would need. A type the
/// kernel has, or any type on a new kernel: the plain refusal naming the call and map.
#[test]
fn einval_on_an_old_kernel_is_unsupported() {
    for (release, t, unsupported) in [
        ("4.4.0", map_type::RINGBUF, true),
        ("4.4.0", map_type::HASH, false),
        ("6.18.0", map_type::RINGBUF, false),
    ] {
        let _release = fake::set_kernel_release(release);
        let (_fake, creates) = fake_creates(|_, _| Err(Errno::INVAL));
        let e = refusal(&spec(t));
        if unsupported {
            assert!(
                matches!(&e, Error::Unsupported { feature, min_kernel: "5.8", errno: Errno::INVAL }
                    if *feature == format!("map type {t}")),
                "{release} {t}: {e:?}"
            );
            assert!(e.to_string().contains("needs Linux 5.8"), "{e}");
        } else {
            assert!(
                matches!(&e, Error::Syscall { call: "bpf(BPF_MAP_CREATE)", subject, errno: Errno::INVAL }
                    if subject == "counts"),
                "{release} {t}: {e:?}"
            );
        }
        assert_eq!(named(&creates), [true, false], "{release} {t}");
    }
}

/// Kernels before 4.15 know no map name (E2BIG, or EINVAL on some): created again
/// without one.
#[test]
fn a_refused_name_is_retried_without_it() {
    for errno in [Errno::TOOBIG, Errno::INVAL] {
        let (_fake, creates) =
            fake_creates(move |n, _| if n == 0 { Err(errno) } else { Ok(fake::fd()) });
        let m = Map::create(&spec(map_type::HASH), None).unwrap();
        assert_eq!((m.name(), m.max_entries()), ("counts", 16));
        assert_eq!(named(&creates), [true, false]);
    }
}

/// BTF the kernel refuses: the map is created again without it, as libbpf does.
#[test]
fn refused_btf_is_dropped() {
    let btf: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
    let (_fake, creates) = fake_creates(|_, a| {
        if a.btf_fd != 0 {
            Err(Errno::INVAL)
        } else {
            Ok(fake::fd())
        }
    });
    let extra = MapExtra {
        btf_fd: Some(btf.as_fd()),
        btf_key_type_id: 3,
        btf_value_type_id: 5,
        ..MapExtra::default()
    };
    Map::create_with(&spec(map_type::HASH), None, &extra).unwrap();
    let btf_ids: Vec<(i32, u32, u32)> = creates
        .borrow()
        .iter()
        .map(|a| (a.btf_fd as i32, a.btf_key_type_id, a.btf_value_type_id))
        .collect();
    let fd = btf.as_raw_fd();
    // With BTF (named, then nameless), then without.
    assert_eq!(btf_ids, [(fd, 3, 5), (fd, 3, 5), (0, 0, 0)]);
    assert_eq!(named(&creates), [true, false, true]);
}

/// `BPF_MAP_FREEZE` refused with EINVAL: unsupported before 5.2, the plain refusal after.
#[test]
fn freeze_einval_on_old_and_new_kernels() {
    for (release, old) in [("5.1.21", true), ("5.2.0", false)] {
        let _release = fake::set_kernel_release(release);
        let _fake = fake::install(|call| match call {
            Call::Bpf(b) if b.cmd == Cmd::MapCreate => Ok(fake::fd()),
            Call::Bpf(b) if b.cmd == Cmd::MapFreeze => Err(Errno::INVAL),
            other => panic!("unexpected {other:?}"),
        });
        let m = Map::create(&spec(map_type::ARRAY), None).unwrap();
        let e = m.freeze().unwrap_err();
        if old {
            assert!(
                matches!(&e, Error::Unsupported { feature, min_kernel: "5.2", errno: Errno::INVAL }
                    if feature == "BPF_MAP_FREEZE"),
                "{e:?}"
            );
        } else {
            assert!(
                matches!(
                    e,
                    Error::Syscall {
                        call: "bpf(BPF_MAP_FREEZE)",
                        errno: Errno::INVAL,
                        ..
                    }
                ),
                "{e:?}"
            );
        }
    }
}
