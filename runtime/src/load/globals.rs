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
