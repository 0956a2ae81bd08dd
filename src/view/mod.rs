//! The interactive map (`sgtsne view`, `embed --view`): an embedding and its label and
//! metadata columns as one HTML page with a WebGL scatter plot — pan, zoom, colour by any
//! column, legend toggles, hover, label search, lasso selection, density mode, PNG export,
//! 3-D rotation.
//!
//! (y, columns) → [`Map`] (checked, quantised, packed) → [`write_map`] (one self-contained
//! file, atomically) / [`to_html`] (a string, for a notebook) / [`serve`] (127.0.0.1,
//! buffers as binary).
//!
//! The renderer is the page's own (`page/viewer.js`, plain WebGL 2, no dependency): it
//! draws the 16-bit coordinates as they are stored, colours through a palette texture whose
//! alpha hides toggled categories, and projects points on the CPU for hover and lasso, so
//! nothing has to be indexed before the first paint. [`write_html`] is the one call for
//! bindings: plain slices in, a file out.

mod column;
mod error;
mod html;
mod map;
mod serve;

use std::path::Path;

pub use column::{Column, Values, MAX_NUMERIC_CATEGORIES};
pub use error::ViewError;
pub use html::{to_html, write_map};
pub use map::Map;
pub use serve::serve;

/// Writes the map of the embedding `y` (n × `dims`, row-major, `dims` 1–3) with `columns`
/// (labels and metadata, one value per point each) to `path` as one self-contained HTML
/// page titled `title`. Checks everything before writing; on any error nothing is written.
pub fn write_html(
    path: &Path,
    y: &[f32],
    dims: usize,
    columns: &[Column],
    title: &str,
) -> crate::Result<()> {
    write_map(path, &Map::new(y, dims, columns, title)?)
}
