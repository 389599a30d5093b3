//! `--set NAME=VALUE`: global variables written into their data map's initial value
//! before load (libbpf's skeleton `rodata->NAME = VALUE`), each value checked against the
//! variable's BTF type by [`sluice_core::btf::encode_value`].

use crate::error::{ConfigError, Error, Result};
use sluice_core::btf::{encode_value, find_global_var, global_vars, value_kind, Btf};
use sluice_core::object::{MapKind, Object};

/// `NAME (TYPE, SECTION)` for every global variable of `btf`: what a bad `--set` lists.
fn variables(btf: Option<&Btf<'_>>) -> Vec<String> {
    let Some(btf) = btf else {
        return Vec::new();
    };
    global_vars(btf)
        .map(|v| match value_kind(btf, v.type_id) {
            Ok(kind) => format!("{} ({kind}, {})", v.name, v.section),
            Err(_) => format!("{} ({})", v.name, v.section),
        })
        .collect()
}

/// The initial values of the object's maps with `globals` written in, indexed like
/// [`Object::maps`]: `None` for a map no variable of `globals` lives in (it keeps the
/// section's bytes).
///
/// # Errors
/// [`ConfigError::UnknownVariable`] for a name with no variable in a data section (or an
/// object without BTF), [`ConfigError::BadValue`] for a value its type does not take;
/// both list the object's variables.
pub(crate) fn initial_values(
    obj: &Object<'_, '_>,
    btf: Option<&Btf<'_>>,
    globals: &[(String, String)],
) -> Result<Vec<Option<Vec<u8>>>> {
    let mut out: Vec<Option<Vec<u8>>> = obj.maps().iter().map(|_| None).collect();
    for (name, value) in globals {
        let unknown = || {
            Error::Config(ConfigError::UnknownVariable {
                name: name.clone(),
                variables: variables(btf),
            })
        };
        let bad = |why: String| {
            Error::Config(ConfigError::BadValue {
                name: name.clone(),
                value: value.clone(),
                why,
                variables: variables(btf),
            })
        };
        let b = btf.ok_or_else(unknown)?;
        let var = find_global_var(b, name).ok_or_else(unknown)?;
        let Some((index, def)) = obj.maps().iter().enumerate().find(|(_, m)| {
            matches!(m.kind, MapKind::Rodata | MapKind::Data | MapKind::Bss)
                && m.name == var.section
        }) else {
            return Err(unknown());
        };
        let kind = value_kind(b, var.type_id).map_err(|e| bad(e.to_string()))?;
        let size = b.size_of(var.type_id).map_err(|e| bad(e.to_string()))?;
        // Where the variable lies: its ELF symbol, as the DATASEC fix-up places it.
        let offset = obj
            .variable_offset(name)
            .and_then(|o| usize::try_from(o).ok())
            .unwrap_or(var.offset as usize);
        let slot = out.get_mut(index).ok_or_else(unknown)?;
        let bytes = slot.get_or_insert_with(|| {
            let mut v = vec![0u8; def.value_size as usize];
            let n = def.initial.len().min(v.len());
            if let (Some(d), Some(s)) = (v.get_mut(..n), def.initial.get(..n)) {
                d.copy_from_slice(s);
            }
            v
        });
        let end = offset.checked_add(size as usize);
        let place = end
            .and_then(|end| bytes.get_mut(offset..end))
            .ok_or_else(|| {
                bad(format!(
                    "the variable's {size} bytes at offset {offset} are past the end of {} \
                     ({} bytes)",
                    var.section, def.value_size
                ))
            })?;
        encode_value(&kind, value, b.endian(), place)
            .map_err(|e| bad(format!("{e} for {kind}")))?;
        log::debug!("--set {name}={value}: {kind} at {}+{offset}", var.section);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use sluice_core::object::ObjectStorage;

    fn values(globals: &[(&str, &str)]) -> Result<Vec<Option<Vec<u8>>>> {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/bpf/prog_config.o"
        ))
        .unwrap();
        let mut storage = ObjectStorage::new();
        let obj = Object::open(&bytes, &mut storage).unwrap();
        let mut index = vec![0u32; Btf::count_types(obj.btf_bytes().unwrap()).unwrap() as usize];
        let btf = obj.parse_btf(&mut index).unwrap();
        let g: Vec<(String, String)> = globals
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        let out = initial_values(&obj, btf.as_ref(), &g)?;
        // Only the maps a variable was set in change; every other byte is the section's.
        for (def, v) in obj.maps().iter().zip(&out) {
            if let Some(v) = v {
                assert_eq!(v.len(), def.value_size as usize, "{}", def.name);
            }
        }
        Ok(out)
    }

    fn map_index(name: &str) -> usize {
        ["target_tgid", "events", "sized", ".rodata", ".data", ".bss"]
            .iter()
            .position(|n| *n == name)
            .unwrap()
    }

    #[test]
    fn values_land_at_the_variables_symbol() {
        let out = values(&[("knob_u32", "0x01020304"), ("bss_knob", "5")]).unwrap();
        let rodata = out[map_index(".rodata")].as_ref().unwrap();
        // knob_u32 follows u8, s8, u16, s16 (1+1+2+2, padded to 8) in .rodata.
        let at = rodata
            .windows(4)
            .position(|w| w == 0x0102_0304u32.to_ne_bytes())
            .unwrap();
        assert_eq!(at % 4, 0);
        // The other knobs keep their initial values (knob_u8 = 1 is the first byte).
        assert_eq!(rodata[0], 1);
        let bss = out[map_index(".bss")].as_ref().unwrap();
        assert_eq!(bss[..8], 5u64.to_ne_bytes());
        assert!(out[map_index(".data")].is_none());
        assert!(out[map_index("events")].is_none());
    }

    #[test]
    fn unknown_names_and_bad_values_list_the_variables() {
        let e = values(&[("nope", "1")]).unwrap_err();
        assert!(e.is_bad_input());
        let text = e.to_string();
        assert!(
            text.starts_with("--set nope: no such global variable"),
            "{text}"
        );
        assert!(text.contains("knob_mode (enum mode, .rodata)"), "{text}");
        let e = values(&[("knob_u16", "65536")]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--set knob_u16=65536: out of range (0..=65535) for u16;"),
            "{e}"
        );
    }
}
