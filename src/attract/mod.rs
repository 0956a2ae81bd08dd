//! attract stage.
