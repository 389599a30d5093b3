//! Per-architecture tables: syscall numbers, `pt_regs` layouts, DWARF registers,
//! calling conventions.
