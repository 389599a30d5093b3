//! Constructors for the instructions sluice emits (`Insn::mov64_reg` ...).
