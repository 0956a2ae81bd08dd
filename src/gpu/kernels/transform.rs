//! `kernels/transform.cu`: one gradient step of the new points of `sgtsne transform`
//! against the reference's fixed fields (`crate::transform`).

use super::repulse::GridGeom;
use crate::gpu::launch::kernels;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: Transform;

    /// Every new point i (one thread) reads the (2 + dims) `fields` of the reference at its
    /// place clamped into the grid `geom`, adds the attraction of its k reference
    /// neighbours `nbr` weighted by `p` and the kernel of `dof` degrees of freedom, clips
    /// the gradient to `max_grad_norm` and takes one momentum step, updating `y` and
    /// `velocity` in place.
    pub struct TransformStep = "transform_step_{dims}d" {
        dims: host,
        len: host,
        n: host,
        m: usize as i32,
        k: usize as i32,
        y: out f32 [m * dims],
        velocity: out f64 [m * dims],
        nbr: in i32 [m * k],
        p: in f32 [m * k],
        ref_y: in f32 [n * dims],
        fields: in f64 [(2 + dims) * len],
        geom: GridGeom,
        dof: f64,
        exaggeration: f64,
        learning_rate: f64,
        momentum: f64,
        max_grad_norm: f64,
    }
}
