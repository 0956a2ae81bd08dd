//! P and its layouts for the attraction's SpMV-like product (DESIGN §2.1), behind one type,
//! [`P`].
//!
//! The canonical form is CSR ([`crate::affinity::Affinities`]); the CPU converts it once
//! to [`Csb`] (compressed sparse blocks, Buluç et al. 2009), whose β×β blocks keep the
//! gathered coordinates y_j of one block column in cache while a block row is processed;
//! the GPU reads [`HybGpu`] (ELL + COO, Bell & Garland 2009), built on the device by the GPU
//! affinity stage or uploaded from [`Hyb`].

pub mod csb;
pub mod hyb;
mod p;

pub use csb::Csb;
pub use hyb::gpu::{BlockShape, HybGpu};
pub use hyb::Hyb;
pub use p::{Layout, P};

/// Errors of the sparse layouts.
#[derive(Debug, thiserror::Error)]
pub enum SparseError {
    /// A layout invariant does not hold.
    #[error("sparse invariant violated: {what}")]
    Invariant { what: String },
}

/// Splits `data` into the consecutive slices delimited by `bounds` (ascending, from 0).
pub(crate) fn split_at_bounds<'a, T>(mut data: &'a mut [T], bounds: &[usize]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(bounds.len().saturating_sub(1));
    for w in bounds.windows(2) {
        let (part, rest) = data.split_at_mut(w[1] - w[0]);
        parts.push(part);
        data = rest;
    }
    parts
}

/// A random symmetric P of n points for tests: row i draws `row_len(i)` partners, each pair
/// added both ways with one random weight.
#[cfg(test)]
pub(crate) fn random_symmetric_p(
    n: usize,
    rng: &mut rand::rngs::StdRng,
    row_len: impl Fn(usize, &mut rand::rngs::StdRng) -> usize,
) -> crate::affinity::Affinities {
    use rand::Rng;
    let mut t = sprs::TriMatI::<f32, u32>::new((n, n));
    for i in 0..n {
        for _ in 0..row_len(i, rng) {
            let j = rng.random_range(0..n);
            if j != i {
                let v: f32 = rng.random();
                t.add_triplet(i, j, v);
                t.add_triplet(j, i, v);
            }
        }
    }
    t.to_csr()
}

/// [`random_symmetric_p`] with ragged rows: 1 to 19 partners, every 97th row 200 (long rows
/// for HYB's COO part).
#[cfg(test)]
pub(crate) fn ragged_p(n: usize, rng: &mut rand::rngs::StdRng) -> crate::affinity::Affinities {
    use rand::Rng;
    random_symmetric_p(n, rng, |i, rng| match i % 97 {
        0 => 200,
        _ => rng.random_range(1..20),
    })
}
