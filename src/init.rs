//! init.
