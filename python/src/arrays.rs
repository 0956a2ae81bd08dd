//! numpy arrays in and out, and the one place of this crate that needs `unsafe`: a
//! C-contiguous float32 array read in place by the library while the GIL is released.

use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use sgtsne::points::SharedValues;
use sgtsne::Points;
use std::sync::Arc;

/// A caller's C-contiguous float32 array, kept alive and read in place.
struct Borrowed {
    /// Holds the array (and so its buffer) for as long as the library reads it.
    _array: Py<PyArray2<f32>>,
    ptr: *const f32,
    len: usize,
}

// SAFETY: the buffer belongs to `_array`, which this value keeps alive; numpy never moves or
// frees the data of a live array, and the library only reads it. The Python package's
// functions document that an array must not be changed while a call reads it (as every
// extension that releases the GIL over an array's buffer requires).
unsafe impl Send for Borrowed {}
// SAFETY: as above: shared reads of memory that nothing writes during the call.
unsafe impl Sync for Borrowed {}

impl AsRef<[f32]> for Borrowed {
    fn as_ref(&self) -> &[f32] {
        // SAFETY: `ptr` and `len` describe the C-contiguous buffer of `_array`, alive while
        // `self` is (see the `Send` impl); a zero-length array gives an empty slice from a
        // dangling but aligned pointer, which numpy guarantees.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// The rows of `x` as [`Points`] read in place (no copy): the Python layer has made it a
/// C-contiguous float32 array, converting other layouts and dtypes once.
pub fn points_in_place(x: &Bound<'_, PyArray2<f32>>) -> PyResult<Points> {
    let view: PyReadonlyArray2<f32> = x.try_readonly()?;
    let (n, d) = (view.shape()[0], view.shape()[1]);
    let slice = view.as_slice().map_err(|_| {
        pyo3::exceptions::PyValueError::new_err("internal: points must be C-contiguous")
    })?;
    let borrowed = Borrowed {
        _array: x.clone().unbind(),
        ptr: slice.as_ptr(),
        len: slice.len(),
    };
    Ok(Points::shared(n, d, Arc::new(borrowed) as SharedValues))
}

/// A copy of a 1-D array's values.
pub fn vec1<T: numpy::Element + Copy>(x: &Bound<'_, PyArray1<T>>) -> PyResult<Vec<T>> {
    let view: PyReadonlyArray1<T> = x.try_readonly()?;
    Ok(view.as_array().iter().copied().collect())
}

/// A copy of a 2-D array's values, row-major, with its shape.
pub fn vec2<T: numpy::Element + Copy>(
    x: &Bound<'_, PyArray2<T>>,
) -> PyResult<(usize, usize, Vec<T>)> {
    let view: PyReadonlyArray2<T> = x.try_readonly()?;
    let (n, d) = (view.shape()[0], view.shape()[1]);
    Ok((n, d, view.as_array().iter().copied().collect()))
}

/// Row-major values as an (n, width) array, without a copy.
pub fn to_array2<'py, T: numpy::Element>(
    py: Python<'py>,
    values: Vec<T>,
    width: usize,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    let n = values.len() / width.max(1);
    PyArray1::from_vec(py, values).reshape([n, width])
}
