//! `--pmu MAP=EVENT`: the perf event arrays a session fills with counters instead of
//! bpf-output events, checked against what the objects have.

use sluice_core::perf::abi::map_type;

use super::{Error, ObjectSource};
use crate::attach::{self, open_counters, PerCpuEvents, COUNTERS};
use crate::error::ConfigError;
use crate::load::{LoadedObject, Map};
use std::collections::BTreeMap;

/// Why a `--pmu` map got no counters.
pub(super) enum Failure {
    /// The event is unknown.
    Config(crate::Error),
    /// Opening or storing the counters failed.
    Events(attach::Error),
}

/// The counters of `event` for `map` ([`open_counters`]).
///
/// # Errors
/// [`Failure::Config`] with [`ConfigError::UnknownPmuEvent`]; [`Failure::Events`].
pub(super) fn open(map: &Map, event: &str, cpus: &[u32]) -> Result<PerCpuEvents, Failure> {
    if attach::counter(event).is_none() {
        return Err(Failure::Config(crate::Error::Config(
            ConfigError::UnknownPmuEvent {
                event: event.to_owned(),
                events: COUNTERS.iter().map(|(n, _, _)| (*n).to_owned()).collect(),
            },
        )));
    }
    open_counters(map, event, cpus).map_err(Failure::Events)
}

/// Every map `pmu` names is a perf event array of one of the loaded objects.
///
/// # Errors
/// [`Error::Load`] with [`ConfigError::UnknownPmuMap`] listing the perf event arrays.
pub(super) fn check(
    loaded: &[LoadedObject],
    objects: &[ObjectSource],
    pmu: &BTreeMap<String, String>,
) -> Result<(), Error> {
    let arrays = || {
        loaded
            .iter()
            .flat_map(LoadedObject::maps)
            .filter(|m| m.map_type() == map_type::PERF_EVENT_ARRAY)
    };
    let Some(name) = pmu
        .keys()
        .find(|n| !arrays().any(|m| m.name() == n.as_str()))
    else {
        return Ok(());
    };
    Err(Error::Load {
        object: objects
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        source: crate::Error::Config(ConfigError::UnknownPmuMap {
            name: name.clone(),
            maps: arrays().map(|m| m.name().to_owned()).collect(),
        }),
    })
}
