//! `sluice-runtime`: the std half of sluice — syscalls, loader, probes, attach, rings.
