//! gpu stage.
