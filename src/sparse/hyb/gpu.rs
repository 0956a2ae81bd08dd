//! HYB on the device: the GPU sibling of [`Hyb`], the layout the GPU attraction reads
//! ([`crate::attract::gpu`]).

use cudarc::driver::CudaSlice;

use super::Hyb;
use crate::gpu::{Gpu, GpuError};

/// P in HYB, resident on the device, with the layout and invariants of [`Hyb`]: ELL slot s
/// of row i at s · n + i (padding (i, 0)), COO sorted by row. Empty COO arrays hold one
/// padding element (the kernels read none of it; cudarc refuses zero-length allocations on
/// some paths).
pub struct HybGpu {
    pub(crate) gpu: &'static Gpu,
    pub(crate) n: usize,
    /// The whole P's number of the first row ([`Hyb::row0`]).
    pub(crate) row0: usize,
    /// ELL width K.
    pub(crate) width: usize,
    pub(crate) coo_len: usize,
    pub(crate) ell_cols: CudaSlice<i32>,
    pub(crate) ell_vals: CudaSlice<f32>,
    pub(crate) coo_rows: CudaSlice<i32>,
    pub(crate) coo_cols: CudaSlice<i32>,
    pub(crate) coo_vals: CudaSlice<f32>,
}

impl HybGpu {
    /// Uploads `hyb`.
    pub fn new(gpu: &'static Gpu, hyb: &Hyb) -> Result<Self, GpuError> {
        let s = &gpu.stream;
        let pad_i = |v: &[i32]| if v.is_empty() { vec![0] } else { v.to_vec() };
        let pad_f = |v: &[f32]| if v.is_empty() { vec![0.0] } else { v.to_vec() };
        Ok(HybGpu {
            gpu,
            n: hyb.n,
            row0: hyb.row0,
            width: hyb.k,
            coo_len: hyb.coo_vals.len(),
            ell_cols: s.clone_htod(&pad_i(&hyb.ell_cols))?,
            ell_vals: s.clone_htod(&pad_f(&hyb.ell_vals))?,
            coo_rows: s.clone_htod(&pad_i(&hyb.coo_rows))?,
            coo_cols: s.clone_htod(&pad_i(&hyb.coo_cols))?,
            coo_vals: s.clone_htod(&pad_f(&hyb.coo_vals))?,
        })
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The whole P's number of the first row ([`Hyb::row0`]; 0 for the whole P).
    pub fn row0(&self) -> usize {
        self.row0
    }

    /// The ELL width K.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Entries in the COO part.
    pub fn coo_len(&self) -> usize {
        self.coo_len
    }

    /// The arrays downloaded, as a host [`Hyb`] (for tests and inspection).
    pub fn to_host(&self) -> Result<Hyb, GpuError> {
        let s = &self.gpu.stream;
        let (ell, m) = (self.n * self.width, self.coo_len);
        Ok(Hyb {
            n: self.n,
            row0: self.row0,
            k: self.width,
            ell_cols: s.clone_dtoh(&self.ell_cols.slice(..ell))?,
            ell_vals: s.clone_dtoh(&self.ell_vals.slice(..ell))?,
            coo_rows: s.clone_dtoh(&self.coo_rows.slice(..m))?,
            coo_cols: s.clone_dtoh(&self.coo_cols.slice(..m))?,
            coo_vals: s.clone_dtoh(&self.coo_vals.slice(..m))?,
        })
    }
}
