//! backend stage.
