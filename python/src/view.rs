//! The interactive map from Python: the library's [`sgtsne::view`] page of an embedding and
//! its columns, as a string (a notebook's HTML output) or a file.

use std::path::PathBuf;

use numpy::PyArray2;
use pyo3::prelude::*;
use sgtsne::view::{self, Column, Map};

use crate::arrays;
use crate::errors::IntoPy;

/// A column from Python: its name and either a float64 array (numbers) or one text per
/// point, whose kind the library guesses as it does for `--meta` ([`Column::from_text`]:
/// whole numbers with few values and any text are categories).
type ColumnArg<'py> = (String, Bound<'py, PyAny>);

fn map(y: &Bound<'_, PyArray2<f32>>, columns: Vec<ColumnArg<'_>>, title: &str) -> PyResult<Map> {
    let (_, dims, values) = arrays::vec2(y)?;
    let columns = columns
        .into_iter()
        .map(|(name, values)| {
            if let Ok(numbers) = values.cast::<numpy::PyArray1<f64>>() {
                return Ok(Column::numeric(name, arrays::vec1(numbers)?));
            }
            Ok(Column::from_text(name, values.extract()?))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Map::new(&values, dims, &columns, title)
        .map_err(sgtsne::Error::from)
        .py_err()
}

/// The self-contained page of the map, as a string.
#[pyfunction]
fn view_html(
    y: Bound<'_, PyArray2<f32>>,
    columns: Vec<ColumnArg<'_>>,
    title: &str,
) -> PyResult<String> {
    Ok(view::to_html(&map(&y, columns, title)?))
}

/// Writes the self-contained page of the map to `path` (atomically; nothing on error).
#[pyfunction]
fn view_write(
    path: PathBuf,
    y: Bound<'_, PyArray2<f32>>,
    columns: Vec<ColumnArg<'_>>,
    title: &str,
) -> PyResult<()> {
    let map = map(&y, columns, title)?;
    view::write_map(&path, &map).py_err()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(view_html, m)?)?;
    m.add_function(wrap_pyfunction!(view_write, m)?)?;
    Ok(())
}
