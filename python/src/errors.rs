//! The library's errors as the Python exceptions a scientist expects: bad input and
//! parameters raise `ValueError`, memory that cannot be had `MemoryError`, a GPU that cannot
//! be used or fails `RuntimeError` — each with the library's own message, the one the CLI
//! prints.

use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::PyErr;
use sgtsne::Error;

/// `error` as a Python exception.
pub fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::Memory { .. } | Error::DeviceMemory { .. } => PyMemoryError::new_err(message),
        Error::Gpu(e) if e.is_out_of_memory() => PyMemoryError::new_err(message),
        Error::Gpu(_) | Error::GpuUnavailable { .. } => PyRuntimeError::new_err(message),
        Error::Interrupted { .. } => PyKeyboardInterrupt::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// `Result` with the library's error into one with a Python exception.
pub trait IntoPy<T> {
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for sgtsne::Result<T> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
