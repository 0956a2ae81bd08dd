//! Integration tests, one binary (lean to build).

/// The command-line tool: outputs, bad input, exit codes.
mod cli;
/// Whole embeddings of real data (the embedded digits) and of graphs.
mod e2e;
/// The analytic gradient against finite differences of KL(P‖Q).
mod gradient;
/// The grid-size sweep: a tiny sweep's CSV and charts, configuration errors.
mod sweep;
