//! ELF views.
