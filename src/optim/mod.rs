//! optim stage.
