//! What the command line sets on an object (`--prog`, `--set`, `--map-size`, pinning) and
//! can get wrong: data only, as the rest of `error/`.

use rustix::io::Errno;
use std::fmt;

/// A choice or setting that does not fit the object, or a pinned map that does not fit
/// the object's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--prog NAME` or `--event NAME=SPEC`: the object has no program of that name.
    UnknownProgram {
        /// The option that named it: `--prog` or `--event`.
        option: &'static str,
        /// The name asked for.
        name: String,
        /// The programs the object offers (function name and section).
        programs: Vec<String>,
    },
    /// `--set NAME=VALUE`: no global variable of that name in `.rodata*`, `.data*`, `.bss*`.
    UnknownVariable {
        /// The name asked for.
        name: String,
        /// The variables the object has (name, type, section).
        variables: Vec<String>,
    },
    /// `--set NAME=VALUE`: the value does not fit the variable's type.
    BadValue {
        /// The variable.
        name: String,
        /// The value given.
        value: String,
        /// Why (`-1 is out of range for u32 (0..=4294967295)`).
        why: String,
        /// The variables the object has (name, type, section).
        variables: Vec<String>,
    },
    /// `--map-size NAME=N`: the object has no map of that name (or it is a global data
    /// map, whose size is its section's).
    UnknownMap {
        /// The name asked for.
        name: String,
        /// The maps that can be sized.
        maps: Vec<String>,
    },
    /// `--pmu MAP=EVENT`: no perf event array of that name.
    UnknownPmuMap {
        /// The name asked for.
        name: String,
        /// The perf event arrays the objects have.
        maps: Vec<String>,
    },
    /// `--pmu MAP=EVENT`: an event sluice does not know.
    UnknownPmuEvent {
        /// The event asked for.
        event: String,
        /// The events it knows.
        events: Vec<String>,
    },
    /// A map left at `max_entries` 0 for the loader to size, and not sized.
    ZeroEntries {
        /// The map.
        map: String,
    },
    /// A map pinned by name (`LIBBPF_PIN_BY_NAME`) exists and differs from the object's
    /// definition.
    PinMismatch {
        /// The map.
        map: String,
        /// Its pin path.
        path: String,
        /// The attribute that differs (`max_entries` ...).
        what: &'static str,
        /// The pinned map's value.
        pinned: u64,
        /// The object's value.
        wanted: u64,
    },
    /// Reusing or making a pin failed.
    Pin {
        /// The map.
        map: String,
        /// Its pin path.
        path: String,
        /// The call (`bpf(BPF_OBJ_GET)`, `bpf(BPF_OBJ_PIN)`).
        call: &'static str,
        /// The kernel's errno.
        errno: Errno,
    },
}

impl ConfigError {
    /// Whether what the user gave is wrong (exit 2), rather than the system.
    #[must_use]
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, ConfigError::Pin { .. })
    }
}

fn list(f: &mut fmt::Formatter<'_>, what: &str, items: &[String]) -> fmt::Result {
    if items.is_empty() {
        return write!(f, "; the object has no {what}");
    }
    write!(f, "; the object's {what}: {}", items.join(", "))
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::UnknownProgram {
                option,
                name,
                programs,
            } => {
                write!(f, "{option} {name}: no such program")?;
                list(f, "programs", programs)
            }
            ConfigError::UnknownVariable { name, variables } => {
                write!(f, "--set {name}: no such global variable")?;
                list(f, "variables", variables)
            }
            ConfigError::BadValue {
                name,
                value,
                why,
                variables,
            } => {
                write!(f, "--set {name}={value}: {why}")?;
                list(f, "variables", variables)
            }
            ConfigError::UnknownMap { name, maps } => {
                write!(f, "--map-size {name}: no such map")?;
                list(f, "maps", maps)
            }
            ConfigError::UnknownPmuMap { name, maps } => {
                write!(f, "--pmu {name}=...: no perf event array of that name")?;
                list(f, "perf event arrays", maps)
            }
            ConfigError::UnknownPmuEvent { event, events } => write!(
                f,
                "--pmu ...={event}: unknown counter; known: {}",
                events.join(", ")
            ),
            ConfigError::ZeroEntries { map } => write!(
                f,
                "map '{map}' has max_entries 0 (the loader is to size it): \
                 give its size with --map-size {map}=N"
            ),
            ConfigError::PinMismatch {
                map,
                path,
                what,
                pinned,
                wanted,
            } => write!(
                f,
                "map '{map}': the map pinned at {path} has {what} {pinned}, the object's \
                 has {wanted} (remove the pin or pin elsewhere with --pin-root)"
            ),
            ConfigError::Pin {
                map,
                path,
                call,
                errno,
            } => write!(f, "map '{map}': {call} of {path}: {errno}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Pin { errno, .. } => Some(errno),
            _ => None,
        }
    }
}
