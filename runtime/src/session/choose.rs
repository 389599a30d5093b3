//! Programs named on the command line over several objects: each `--prog` name must be a
//! program of one of them (each object loads the chosen programs it has), and so must each
//! `--event NAME=SPEC` name.

use sluice_core::object::ObjectStorage;
use sluice_core::Object;

use super::{Error, ObjectSource};
use crate::error::ConfigError;
use crate::probe::{program_list, program_named};

/// The chosen names each object has, indexed like `objects`; with one object, `names`
/// whole (its plans then name what it lacks).
///
/// # Errors
/// As [`names_in`] (option `--prog`).
pub(super) fn per_object(
    objects: &[ObjectSource],
    names: &[String],
) -> Result<Vec<Vec<String>>, Error> {
    if objects.len() <= 1 {
        return Ok(objects.iter().map(|_| names.to_vec()).collect());
    }
    names_in(objects, names, "--prog")
}

/// The names of `names` each object has a program of (subprograms never), indexed like
/// `objects`.
///
/// # Errors
/// [`Error::Open`] for an object that does not open; [`Error::Load`] with
/// [`ConfigError::UnknownProgram`] (naming `option`) for a name no object has, listing every
/// object's programs (each with its object when there are several).
pub(super) fn names_in<S: AsRef<str>>(
    objects: &[ObjectSource],
    names: &[S],
    option: &'static str,
) -> Result<Vec<Vec<String>>, Error> {
    let mut out = Vec::with_capacity(objects.len());
    let mut all = Vec::new();
    let mut found = vec![false; names.len()];
    for src in objects {
        let mut storage = ObjectStorage::new();
        let obj = Object::open(&src.bytes, &mut storage).map_err(|source| Error::Open {
            object: src.name.clone(),
            source,
        })?;
        let mut mine = Vec::new();
        for (name, hit) in names.iter().zip(found.iter_mut()) {
            let name = name.as_ref();
            if obj
                .programs()
                .iter()
                .any(|p| !p.is_subprogram() && program_named(p, name))
            {
                *hit = true;
                mine.push(name.to_owned());
            }
        }
        let several = objects.len() > 1;
        all.extend(program_list(&obj).into_iter().map(|p| match several {
            true => format!("{p} in {}", src.name),
            false => p,
        }));
        out.push(mine);
    }
    if let Some((name, _)) = names.iter().zip(&found).find(|(_, hit)| !**hit) {
        let object = objects
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Error::Load {
            object,
            source: crate::Error::Config(ConfigError::UnknownProgram {
                option,
                name: name.as_ref().to_owned(),
                programs: all,
            }),
        });
    }
    Ok(out)
}
