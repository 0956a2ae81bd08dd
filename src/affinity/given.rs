//! P as the user gives it (`--affinities P.mtx`), as FIt-SNE's `load_affinities` and
//! openTSNE's `PrecomputedAffinities` take it: no calibration and no λ-rescaling, only what
//! makes it a joint distribution t-SNE can use.
//!
//! A given P must be square with finite, non-negative entries; anything else is an error
//! naming the entry. Its diagonal is dropped (t-SNE defines $p_{ii} = 0$), and a matrix that
//! is not symmetric or does not sum to 1 is made so by $P ← (P + P^T) / \sum(P + P^T)$,
//! each with a note for the report, because a user who meant to hand over a finished P
//! should hear that it was changed.

use super::{symmetrize, Affinities, AffinityError};
use crate::Result;

/// Relative tolerance within which a given P counts as symmetric and summing to 1.
const TOLERANCE: f64 = 1e-6;

/// The joint probabilities of a given matrix, and notes on what was changed.
pub fn given(p: &sprs::CsMat<f64>) -> Result<(Affinities, Vec<String>)> {
    let (rows, cols) = p.shape();
    if rows != cols {
        return Err(AffinityError::BadGraph {
            what: format!("affinities must be a square matrix, this one is {rows} × {cols}"),
        }
        .into());
    }
    let p = p.to_csr();
    let n = rows;
    let mut indptr = Vec::with_capacity(n + 1);
    let mut indices = Vec::with_capacity(p.nnz());
    let mut values = Vec::with_capacity(p.nnz());
    let mut diagonal = 0usize;
    let mut total = 0.0;
    indptr.push(0);
    for (i, row) in p.outer_iterator().enumerate() {
        for (j, &v) in row.iter() {
            if !(v.is_finite() && v >= 0.0) {
                return Err(AffinityError::BadGraph {
                    what: format!(
                        "affinity ({}, {}) is {v}; affinities must be finite and not \
                         negative (1-based)",
                        i + 1,
                        j + 1
                    ),
                }
                .into());
            }
            if j == i {
                diagonal += (v > 0.0) as usize;
            } else if v > 0.0 {
                indices.push(j as u32);
                values.push(v);
                total += v;
            }
        }
        indptr.push(indices.len());
    }
    if total <= 0.0 {
        return Err(AffinityError::BadGraph {
            what: "the affinities have no positive entry off the diagonal".into(),
        }
        .into());
    }
    let mut notes = Vec::new();
    if diagonal > 0 {
        notes.push(format!(
            "the affinities' diagonal ({diagonal} non-zero entries) was dropped: p_ii = 0"
        ));
    }
    if !is_symmetric(&p) {
        notes.push("the affinities were not symmetric: P = (P + Pᵀ) / 2 used".into());
    }
    if (total - 1.0).abs() > TOLERANCE {
        notes.push(format!(
            "the affinities summed to {total:.6} (diagonal left out): normalised to 1"
        ));
    }
    Ok((symmetrize(n, &indptr, &indices, &values)?, notes))
}

/// Whether every off-diagonal entry equals its mirror within [`TOLERANCE`] of the largest.
fn is_symmetric(p: &sprs::CsMat<f64>) -> bool {
    let scale = p.data().iter().fold(0f64, |m, &v| m.max(v.abs()));
    let t = p.transpose_view().to_csr();
    let diff = (p - &t).data().iter().fold(0f64, |m, &v| m.max(v.abs()));
    diff <= TOLERANCE * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(n: usize, entries: &[(usize, usize, f64)]) -> sprs::CsMat<f64> {
        let mut t = sprs::TriMat::new((n, n));
        for &(i, j, v) in entries {
            t.add_triplet(i, j, v);
        }
        t.to_csr()
    }

    #[test]
    fn a_finished_p_is_kept_without_notes() {
        let p = csr(3, &[(0, 1, 0.25), (1, 0, 0.25), (1, 2, 0.25), (2, 1, 0.25)]);
        let (a, notes) = given(&p).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(a.get(0, 1), Some(&0.25));
        assert_eq!(a.get(2, 1), Some(&0.25));
    }

    #[test]
    fn an_unfinished_p_is_symmetrised_and_normalised_with_notes() {
        let p = csr(3, &[(0, 0, 5.0), (0, 1, 3.0), (1, 2, 1.0)]);
        let (a, notes) = given(&p).unwrap();
        assert_eq!(notes.len(), 3, "{notes:?}");
        let sum: f64 = a.data().iter().map(|&v| v as f64).sum();
        assert!((sum - 1.0).abs() < 1e-6);
        assert_eq!(a.get(1, 0), a.get(0, 1));
        assert!((*a.get(0, 1).unwrap() as f64 - 3.0 / 8.0).abs() < 1e-7);
        assert_eq!(a.get(0, 0), None);
    }

    #[test]
    fn bad_matrices_are_refused() {
        let mut t = sprs::TriMat::new((2, 3));
        t.add_triplet(0, 1, 1.0);
        let err = given(&t.to_csr()).unwrap_err().to_string();
        assert!(err.contains("2 × 3"), "{err}");
        let err = given(&csr(2, &[(0, 1, -0.5)])).unwrap_err().to_string();
        assert!(err.contains("(1, 2)") && err.contains("-0.5"), "{err}");
        let err = given(&csr(2, &[(0, 0, 1.0)])).unwrap_err().to_string();
        assert!(err.contains("no positive"), "{err}");
    }
}
