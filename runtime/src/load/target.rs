//! The workload's pid, written where the filters look for it.
//!
//! Perf event arrays are system-wide (a program may only write to the event of the CPU it
//! runs on, whoever runs there), so a filter that wants the workload only must check the
//! pid itself. When recording a task, its pid goes at key 0 of every `BPF_MAP_TYPE_ARRAY`
//! map named [`TARGET_TGID_MAP`] (4-byte key and value) before the events are enabled.

use sluice_core::perf::abi::map_type;

use super::map::UpdateMode;
use super::object::LoadedObject;
use crate::error::Result;

/// Name of the array map filled with the workload's pid (module docs).
pub const TARGET_TGID_MAP: &str = "target_tgid";

/// Writes `pid` at key 0 of every [`TARGET_TGID_MAP`] map of `loaded` (module docs).
///
/// # Errors
/// As [`super::Map::update`].
pub fn set_target_tgid(loaded: &LoadedObject, pid: i32) -> Result<()> {
    for map in loaded.maps() {
        if map.name() == TARGET_TGID_MAP
            && map.map_type() == map_type::ARRAY
            && map.key_size() == 4
            && map.value_size() == 4
        {
            let tgid = u32::try_from(pid).unwrap_or(0);
            map.update(&0u32, &tgid, UpdateMode::Any)?;
        }
    }
    Ok(())
}
