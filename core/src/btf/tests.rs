use super::*;

#[test]
fn essential_names() {
    let cases: &[(&str, &str)] = &[
        ("task_struct", "task_struct"),
        ("task_struct___old", "task_struct"),
        ("a___b___c", "a___b"),
        ("x____y", "x____y"),
        ("___x", "___x"),
        ("x___", "x___"),
        ("a___b", "a"),
        ("", ""),
    ];
    for &(name, want) in cases {
        assert_eq!(&name[..essential_name_len(name.as_bytes())], want, "{name}");
    }
}

#[test]
fn kinds_round_trip() {
    for k in 0..=31u8 {
        match Kind::from_u8(k) {
            Some(kind) => assert_eq!(kind as u8, k),
            None => assert!(k == 0 || k > 19),
        }
    }
    for k in 0..=13 {
        assert_eq!(CoreReloKind::from_u32(k).to_u32(), k);
    }
    assert_eq!(CoreReloKind::from_u32(99), CoreReloKind::Unknown(99));
}

#[test]
fn err_name_cuts() {
    let long = [b'x'; 100];
    let n = ErrName::new(&long);
    assert!(n.is_cut());
    assert_eq!(n.as_str().len(), NAME_IN_ERROR);
    assert_eq!(ErrName::new(b"map").as_str(), "map");
}
