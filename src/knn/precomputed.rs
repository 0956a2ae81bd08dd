//! Neighbours computed elsewhere (`embed --knn-from`): lists as read from a file made into the
//! [`Neighbors`] the rest of the pipeline expects, as openTSNE's `PrecomputedNeighbors` and
//! umap-learn's `precomputed_knn` take them.
//!
//! Files from other tools differ in small ways, each handled here: the point itself may be
//! listed first (scikit-learn's `kneighbors`, FAISS), rows may be unsorted (a CSR row is
//! sorted by column) or of different lengths (scanpy's graph after symmetrisation), and a
//! neighbour may repeat. Each row keeps its nearest `k` other points, ordered by (distance,
//! index) as every search here orders them, so the same neighbours give the same P bit for
//! bit whether they were found inline or read back.

use rayon::prelude::*;

use super::{by_dist_then_index, Neighbors};
use crate::io::NeighborLists;
use crate::{Error, Result};

/// The nearest `k` neighbours of each row of `lists` (fewer when the shortest row holds
/// fewer; the caller reads `k` back from the result), their distances squared. `source` names
/// the file in errors.
pub fn from_lists(lists: &NeighborLists, k: usize, source: &str) -> Result<Neighbors> {
    let n = lists.n();
    let rows: Vec<Vec<(f32, u32)>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let (a, b) = (lists.indptr[i], lists.indptr[i + 1]);
            let mut row: Vec<(f32, u32)> = (a..b)
                .filter(|&t| lists.indices[t] as usize != i)
                .map(|t| {
                    let d = lists.distances[t];
                    ((d * d) as f32, lists.indices[t])
                })
                .collect();
            row.sort_unstable_by(by_dist_then_index);
            // A repeated neighbour keeps its nearest entry, the first after the sort. Rows
            // rarely repeat one: a sorted copy of the indices tells, and only then a set.
            let mut ids: Vec<u32> = row.iter().map(|&(_, j)| j).collect();
            ids.sort_unstable();
            if ids.windows(2).any(|w| w[0] == w[1]) {
                let mut seen = std::collections::HashSet::with_capacity(row.len());
                row.retain(|&(_, j)| seen.insert(j));
            }
            row
        })
        .collect();
    let Some((shortest, len)) = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (i, r.len()))
        .min_by_key(|&(_, len)| len)
    else {
        return Err(Error::Data(format!("{source}: no neighbour lists")));
    };
    if len == 0 {
        return Err(Error::Data(format!(
            "{source}: point {shortest} (counting from 0) has no neighbour besides itself"
        )));
    }
    let k = k.min(len);
    Ok(Neighbors::from_rows(n, k, |i, idx, dist| {
        for (t, &(d, j)) in rows[i][..k].iter().enumerate() {
            dist[t] = d;
            idx[t] = j;
        }
    }))
}

/// The neighbours renumbered by `order` (point `r` of the result is point `order[r]` of
/// `nb`): rows moved and indices mapped, each row's order kept.
pub fn permuted(nb: &Neighbors, order: &[u32]) -> Neighbors {
    let inverse = crate::points::inverse_permutation(order);
    Neighbors::from_rows(nb.n, nb.k, |r, idx, dist| {
        let i = order[r] as usize;
        for (t, &j) in nb.row_indices(i).iter().enumerate() {
            idx[t] = inverse[j as usize];
        }
        dist.copy_from_slice(nb.row_distances(i));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(rows: &[&[(u32, f64)]]) -> NeighborLists {
        let mut l = NeighborLists {
            indptr: vec![0],
            indices: vec![],
            distances: vec![],
        };
        for row in rows {
            for &(j, d) in *row {
                l.indices.push(j);
                l.distances.push(d);
            }
            l.indptr.push(l.indices.len());
        }
        l
    }

    #[test]
    fn rows_lose_self_and_repeats_and_are_sorted() {
        let l = lists(&[
            &[(0, 0.0), (2, 2.0), (1, 1.0), (2, 1.5)],
            &[(2, 1.0), (0, 1.0)],
            &[(1, 1.0), (0, 1.5), (2, 0.0)],
        ]);
        let nb = from_lists(&l, 5, "f").unwrap();
        assert_eq!(nb.k, 2);
        assert_eq!(nb.indices, vec![1, 2, 0, 2, 1, 0]);
        assert_eq!(nb.distances, vec![1.0, 2.25, 1.0, 1.0, 1.0, 2.25]);
        let nb = from_lists(&l, 1, "f").unwrap();
        assert_eq!(nb.indices, vec![1, 0, 1]);
    }

    #[test]
    fn a_row_with_only_itself_is_refused() {
        let l = lists(&[&[(1, 1.0)], &[(1, 0.0)]]);
        let err = from_lists(&l, 3, "knn.npz").unwrap_err().to_string();
        assert!(err.contains("knn.npz") && err.contains("point 1"), "{err}");
    }

    #[test]
    fn renumbering_moves_rows_and_maps_indices() {
        let nb = Neighbors {
            n: 3,
            k: 1,
            indices: vec![1, 2, 0],
            distances: vec![1.0, 2.0, 3.0],
        };
        // New point 0 is old 2, new 1 is old 0, new 2 is old 1.
        let p = permuted(&nb, &[2, 0, 1]);
        assert_eq!(p.indices, vec![1, 2, 0]);
        assert_eq!(p.distances, vec![3.0, 1.0, 2.0]);
    }
}
