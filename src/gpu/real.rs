//! The element type of the repulsion's grids on the device (`--precision`): `f32` or `f64`,
//! each with its complex type, its cuFFT complex-to-complex transform and the NVRTC define
//! that selects it in `kernels/repulse.cuh` (the same kernel sources serve both). The
//! Gaussian mixtures' kernels (`kernels/gmm.cu`) take the same define for their `real`.
//!
//! The reference thesis (Pitsianis et al. 2019, SG-t-SNE-Π) computes the interpolated
//! repulsion in double; `f32` is the default here because its rounding is far below the
//! interpolation error at the grids in use, and double costs time on the GPU's critical path
//! (the H100 has half the f64 throughput and half the words per byte). In the hybrid backend
//! the repulsion is hidden behind the CPU attraction, so double comes nearly free there.

use cudarc::cufft::result::CufftError;
use cudarc::cufft::sys::{cufftHandle, cufftType, double2, float2};
use cudarc::cufft::{result, FftDirection};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use cudarc::nccl::NcclType;

/// A grid element type the repulsion kernels are compiled for (and NCCL sums, for the grids
/// of a run over several GPUs).
pub trait DeviceReal:
    DeviceRepr + ValidAsZeroBits + NcclType + Copy + Send + Sync + Unpin + 'static
{
    /// The complex type of the FFTs (`float2` / `double2`).
    type Complex: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + Unpin + 'static;
    /// NVRTC options that compile `kernels/repulse.cuh`'s `real` as this type.
    const DEFINES: &'static [&'static str];
    /// The cuFFT complex-to-complex transform of this precision.
    const C2C: cufftType;

    /// Runs `plan` (of type [`DeviceReal::C2C`]) from `input` into `output`.
    ///
    /// # Safety
    /// `plan` is live, of this type, with a work area and stream set; `input` and `output`
    /// hold the values it transforms.
    unsafe fn exec(
        plan: cufftHandle,
        input: CUdeviceptr,
        output: CUdeviceptr,
        direction: FftDirection,
    ) -> Result<(), CufftError>;
}

/// One [`DeviceReal`] impl: the type, its complex type, define, transform and the cudarc
/// call that runs that transform.
macro_rules! device_real {
    ($t:ty, $complex:ty, $defines:expr, $c2c:ident, $exec:ident) => {
        impl DeviceReal for $t {
            type Complex = $complex;
            const DEFINES: &'static [&'static str] = $defines;
            const C2C: cufftType = cufftType::$c2c;

            unsafe fn exec(
                plan: cufftHandle,
                input: CUdeviceptr,
                output: CUdeviceptr,
                direction: FftDirection,
            ) -> Result<(), CufftError> {
                // SAFETY: the caller's contract.
                unsafe { result::$exec(plan, input as _, output as _, direction as i32) }
            }
        }
    };
}

device_real!(f32, float2, &[], CUFFT_C2C, exec_c2c);
device_real!(f64, double2, &["-DREAL_F64"], CUFFT_Z2Z, exec_z2z);
