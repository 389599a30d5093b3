//! tracefs
