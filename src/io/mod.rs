//! Input and output: points (`.npy`, `.csv`/`.tsv`/`.txt`, `.fvecs`, AnnData `.h5ad`), square
//! images (`.npy`), labels, graphs (`.mtx`), embeddings (`.npy`, `.csv`, `.tsv`, `.h5ad`) and PNG
//! scatter plots.
//!
//! file → [`Points`](crate::Points) / [`Labels`] / `sprs::CsMat<f64>`;
//! embedding → file.
//!
//! - **Errors** ([`IoError`]) always name the file, and the row, column, line or vector where
//!   one applies (1-based, and they say so), because they are read by a person with the file
//!   open in an editor.
//! - **Inputs are checked once, here:** every point value is finite and fits `f32`, so later
//!   stages can rely on [`Points`](crate::Points)' invariants.
//! - **Outputs are atomic** ([`write_atomic`]): written to a temporary file in the target's
//!   directory, then renamed, so a failed or interrupted run never leaves a partial output
//!   that looks like a result. [`check_output_path`] lets the caller fail before a long run.

mod error;
mod fvecs;
pub mod h5ad;
mod images;
mod labels;
mod mixture;
mod mtx;
mod neighbors;
mod npy;
mod npz;
pub mod plot;
mod read;
mod text;
mod write;

pub use error::{IoError, Place};
pub use images::{image_side, read_images};
pub(crate) use labels::integral;
pub use labels::{read_labels, read_labels_bytes, read_labels_npy_bytes, Labels};
pub use mixture::write_mixture;
pub use mtx::{read_graph, read_graph_bytes};
pub use neighbors::{read_neighbors, write_neighbors, IndexType, NeighborLists};
pub use npy::read_points_npy_bytes;
#[cfg(test)]
pub(crate) use npy::tests::npy_file as npy_test_file;
pub use npz::{write_matrix, NpyNumber};
pub use read::{read_points, read_points_bytes};
pub use text::read_table;
pub(crate) use write::temp_prefix;
pub use write::{
    check_output_path, remove_temp_files, write_atomic, write_embedding, write_embedding_text,
    write_labels, OutputKind,
};
