use super::*;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// Brute force: the k nearest other points of each point, nearest first, ties by index.
fn brute<const D: usize>(y: &[f32], k: usize) -> Vec<u32> {
    let n = y.len() / D;
    let k = k.min(n - 1);
    let mut out = Vec::with_capacity(n * k);
    for i in 0..n {
        let q = point::<D>(y, i);
        let mut all: Vec<(f32, u32)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| {
                let p = point::<D>(y, j);
                (
                    (0..D).map(|a| (p[a] - q[a]) * (p[a] - q[a])).sum(),
                    j as u32,
                )
            })
            .collect();
        all.sort_by(|a, b| a.partial_cmp(b).unwrap());
        out.extend(all[..k].iter().map(|&(_, j)| j));
    }
    out
}

/// Clusters of very different densities, exact copies and a far outlier.
fn awkward<const D: usize>(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut y = Vec::with_capacity(n * D);
    for i in 0..n {
        let (centre, spread) = match i % 3 {
            0 => (0.0, 0.01),
            1 => (5.0, 1.0),
            _ => (-30.0, 8.0),
        };
        for _ in 0..D {
            y.push(centre + spread * rng.random_range(-1.0f32..1.0));
        }
    }
    if n >= 3 {
        let copy: Vec<f32> = y[..D].to_vec();
        y[D..2 * D].copy_from_slice(&copy);
        y[2 * D..3 * D].fill(1e4);
    }
    y
}

fn agree<const D: usize>() {
    for (n, k, seed) in [
        (2000, 10, 1),
        (301, 10, 2),
        (40, 39, 3),
        (12, 50, 4),
        (2, 10, 5),
    ] {
        let y = awkward::<D>(n, seed);
        assert_eq!(
            neighbors::<D>(&y, k),
            brute::<D>(&y, k),
            "D {D}, n {n}, k {k}"
        );
    }
    // All points equal: every other point is a neighbour, by index.
    let same = vec![2.5f32; 7 * D];
    assert_eq!(neighbors::<D>(&same, 3), brute::<D>(&same, 3));
    assert!(neighbors::<D>(&same[..D], 3).is_empty());
}

/// Points at three scales (a core, a halo, far stragglers) spread over three levels or
/// more; the rows of a sample of them, the far ones included, are brute force's.
fn levels_agree<const D: usize>() {
    // About 2 · D · BULK_TAIL of the points lie beyond a level's bulk: enough for a
    // second level that leaves some beyond its own bulk.
    let n = 600_000 / D;
    let mut rng = StdRng::seed_from_u64(D as u64);
    let y: Vec<f32> = (0..n)
        .flat_map(|i| {
            let spread = match i % 2000 {
                0 => 1e5,
                1..=5 => 100.0,
                _ => 15.0,
            };
            (0..D)
                .map(|_| 15.0 + spread * rng.random_range(-1.0f32..1.0))
                .collect::<Vec<_>>()
        })
        .collect();
    let search = Search::<D>::new(&y, n);
    let sizes: Vec<usize> = search.levels.iter().map(|l| l.order.len()).collect();
    assert!(sizes.len() >= 3, "{D}-D: levels of {sizes:?}");
    let k = 10;
    let got = neighbors::<D>(&y, k);
    let mut rows: Vec<usize> = (0..n).step_by(2000).take(100).collect();
    rows.extend((0..300).map(|_| rng.random_range(0..n)));
    for i in rows {
        let q = point::<D>(&y, i);
        let mut all: Vec<(f32, u32)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| {
                let p = point::<D>(&y, j);
                let d = (0..D).map(|a| (p[a] - q[a]) * (p[a] - q[a])).sum();
                (d, j as u32)
            })
            .collect();
        all.select_nth_unstable_by(k, |a, b| a.partial_cmp(b).unwrap());
        all.truncate(k);
        all.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let want: Vec<u32> = all.iter().map(|&(_, j)| j).collect();
        assert_eq!(&got[i * k..(i + 1) * k], &want[..], "{D}-D, point {i}");
    }
}

#[test]
fn far_points_in_levels_are_exact() {
    levels_agree::<1>();
    levels_agree::<2>();
    levels_agree::<3>();
}

/// The grid's neighbours are brute force's, order and ties included, in 1, 2 and 3
/// dimensions, for clusters of unequal density, copies, an outlier, k near n and k
/// beyond it.
/// The one-thread and all-core buckets agree (each level of up to `SERIAL_BUCKET` points
/// takes the first, so the searches above seldom see the second), duplicates, an empty
/// cell and the grid's last cells included.
#[test]
fn both_buckets_agree() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut y: Vec<f32> = (0..2 * 50_000)
        .map(|_| rng.random_range(-3.0f32..3.0))
        .collect();
    y.extend_from_slice(&[3.0, 3.0, 3.0, 3.0, -3.0, -3.0]);
    let ids: Vec<u32> = (0..y.len() as u32 / 2).filter(|i| i % 7 != 3).collect();
    let grid = Grid::<2>::over([-3.0; 2], [3.0; 2], ids.len());
    assert_eq!(grid.bucket_serial(&y, &ids), grid.bucket_parallel(&y, &ids));
}

#[test]
fn grid_neighbours_are_the_exact_ones() {
    agree::<1>();
    agree::<2>();
    agree::<3>();
}
