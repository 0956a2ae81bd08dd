//! The uniform interpolation grid: where it sits, how fine it is, and how many nodes it has.
//!
//! Every point interpolates from the 4 nodes `floor(x)−1 … floor(x)+2` per axis (cubic Lagrange
//! on equispaced nodes, Linderman et al. 2019 §2; Pitsianis et al. 2019 §3.2), where `x` is its
//! coordinate in grid units. The grid is a cube of `p` nodes per axis with spacing `h`, its
//! nodes on the lattice of `h`, the first 1.5 to 2.5 spacings below the bounding box of Y and
//! at least 1.5 beyond it on each side, so those 4 nodes always exist.

use super::GridSpec;
use crate::{Error, Result};

/// Smallest number of nodes per axis of an [`GridSpec::Auto`] grid. Small embeddings fill this
/// many nodes with a spacing finer than asked (see [`Grid::fit`]); 32 keeps even a 3-D grid
/// cheap (32³ nodes).
pub const MIN_NODES: usize = 32;

/// Smallest class of the [`Ladder::Sparse`] in 1-D and 2-D, where [`MIN_NODES`] would have
/// led to it through four classes (32, 45, 63, 90) that a first run compiles FFT kernels for.
/// A small embedding's spacing still follows from [`MIN_NODES`]; the rest is margin.
pub const SPARSE_SMALLEST: usize = 126;

/// Upper bound on the total number of grid nodes `p^s`. An [`GridSpec::Auto`] grid larger than
/// this is capped (its spacing grows instead), so an exploding embedding costs accuracy, not
/// memory: 2^22 nodes is 2048² in 2-D and 160³ in 3-D.
pub const MAX_TOTAL_NODES: usize = 1 << 22;

/// Smallest `m ≥ n` of the form 2^a·3^b·5^c·7^d, the sizes for which mixed-radix FFTs are
/// fastest (sgtsnepi's `getBestGridSize` does the same).
pub fn fft_friendly(n: usize) -> usize {
    smallest_from(n, |m| odd_radices(m).is_some())
}

/// Smallest `m ≥ n` of the form 2^a·3^b times at most one 5 or 7: the sizes of the host's
/// ladder ([`Ladder::Fine`]). Of the 7-smooth lengths 2m of the host's FFTs (rustfft's), those
/// with two or more factors 5 or 7 take 1.5–2.8 times as long per n·log n as the others
/// (625, 315, 125 and 280 among the classes a 2-D map of 70k points passes, where 625 alone
/// took half of the G2G's time), while the sizes kept fill the ladder as closely
/// (`benches/RESULTS.md`, the row of the host ladder's sides).
pub fn host_fft_friendly(n: usize) -> usize {
    smallest_from(n, |m| odd_radices(m).is_some_and(|k| k <= 1))
}

/// The smallest `m ≥ max(n, 1)` that `keep`s.
fn smallest_from(n: usize, keep: impl Fn(usize) -> bool) -> usize {
    let mut m = n.max(1);
    while !keep(m) {
        m += 1;
    }
    m
}

/// How many factors 5 and 7 `m` has if it is 7-smooth, `None` otherwise.
fn odd_radices(m: usize) -> Option<u32> {
    let mut r = m;
    while r.is_multiple_of(2) {
        r /= 2;
    }
    while r.is_multiple_of(3) {
        r /= 3;
    }
    let mut count = 0;
    for f in [5, 7] {
        while r.is_multiple_of(f) {
            r /= f;
            count += 1;
        }
    }
    (r == 1).then_some(count)
}

/// The node counts an [`GridSpec::Auto`] grid steps through as the embedding grows: from the
/// ladder's smallest class, each the FFT-friendly size at least a growth factor times the
/// one before.
/// Rounding the wanted count up to a sparse ladder instead of to every FFT-friendly size
/// means far fewer size changes, each of which costs new kernel spectra and new FFT plans.
/// The extra nodes are margin: the nodes sit on the lattice of the spacing whatever their
/// count ([`Grid::fit_box`]), so two ladders give the same interpolation, and the same
/// forces up to the FFTs' rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ladder {
    /// Classes 12.5 % apart (32, 36, 42, 48, 54, 63, 72, 81, …), sizes the host's FFTs run
    /// fast ([`host_fft_friendly`]): for the host's FFTs, whose plans cost next to nothing
    /// and whose G2G, the largest share of a CPU iteration (14.8 of about 28 ms at 70k points
    /// on 2 threads), grows with every extra node.
    Fine,
    /// In 1-D and 2-D classes 40 % apart from [`SPARSE_SMALLEST`] (126, 180, 252, 360, 504,
    /// 720, 1008, 1440, …), in 3-D 12.5 % apart as [`Ladder::Fine`]'s (on every
    /// [`fft_friendly`] size): for cuFFT, which on a machine's
    /// first run compiles kernels for every new grid shape (30–110 ms each on the H100,
    /// whatever the length's factors, while other batches of a shape cost nothing;
    /// `gpu::fft::tests::plan_cost_by_length`). A 2-D run up to 1,200 nodes per axis passes
    /// 8 classes instead of 28; the G2G, a tenth of the device's iteration in 2-D, grows by
    /// about a quarter, and the small grids of the first iterations (126² nodes where 32²
    /// would do, the same spacing) cost the device microseconds. In 3-D the G2G is half of
    /// the iteration and stays on the fine ladder.
    Sparse,
}

impl Ladder {
    /// Growth factor between consecutive classes of a `dims`-dimensional grid.
    fn growth(self, dims: usize) -> f64 {
        match self {
            Ladder::Sparse if dims <= 2 => 1.4,
            _ => 1.125,
        }
    }

    /// The smallest class of a `dims`-dimensional grid.
    pub fn smallest(self, dims: usize) -> usize {
        match self {
            Ladder::Sparse if dims <= 2 => SPARSE_SMALLEST,
            _ => MIN_NODES,
        }
    }

    /// The smallest class `≥ want` of a `dims`-dimensional grid.
    pub fn size_class(self, want: usize, dims: usize) -> usize {
        let mut p = self.smallest(dims);
        while p < want {
            p = self.next_class(p, dims);
        }
        p
    }

    /// The largest class of a `dims`-dimensional grid with at most `nodes` nodes in all
    /// (the smallest class when even that one has more).
    pub fn largest_within(self, nodes: usize, dims: usize) -> usize {
        let fits = |p: usize| p.checked_pow(dims as u32).is_some_and(|len| len <= nodes);
        let mut p = self.smallest(dims);
        loop {
            let next = self.next_class(p, dims);
            if !fits(next) {
                return p;
            }
            p = next;
        }
    }

    /// The class after class `p` of a `dims`-dimensional grid.
    fn next_class(self, p: usize, dims: usize) -> usize {
        let want = (p as f64 * self.growth(dims)).ceil() as usize;
        match self {
            Ladder::Fine => host_fft_friendly(want),
            Ladder::Sparse => fft_friendly(want),
        }
    }
}

/// Ratio between consecutive [`spacing_class`]es.
const SPACING_STEP: f64 = 1.0 + 1.0 / 16.0;

/// The smallest spacing of the ladder `SPACING_STEP^k` (k an integer) that is `≥ h`.
pub fn spacing_class(h: f64) -> f64 {
    let k = (h.ln() / SPACING_STEP.ln() - 1e-9).ceil();
    let class = SPACING_STEP.powf(k);
    // Guard the rounding of ln/powf: the class must never be below h.
    if class < h {
        class * SPACING_STEP
    } else {
        class
    }
}

/// Largest FFT-friendly `m ≤ n` (for capping); `n ≥ 1`.
fn fft_friendly_below(n: usize) -> usize {
    (1..=n.max(1))
        .rev()
        .find(|&m| fft_friendly(m) == m)
        .unwrap_or(1)
}

/// Largest nodes-per-axis that keeps `p^dims ≤ MAX_TOTAL_NODES`: the rounded real root,
/// corrected by a step at most. (Counting up from 1 took 4M steps in 1-D, milliseconds on
/// every grid fit: 5–8 s of a 1000-iteration 1-D run at 1.3M points on the H100.)
pub fn max_nodes_per_axis(dims: usize) -> usize {
    let e = dims as u32;
    let mut p = (MAX_TOTAL_NODES as f64).powf(1.0 / dims as f64).round() as usize;
    while p.pow(e) > MAX_TOTAL_NODES {
        p -= 1;
    }
    while (p + 1).pow(e) <= MAX_TOTAL_NODES {
        p += 1;
    }
    p
}

/// A cubic grid of `p^dims` nodes; node `(k_0, …, k_{s−1})` sits at `origin + k·h` and has flat
/// index `Σ_a k_a p^a` (axis 0 fastest).
///
/// # Invariants
/// - `dims ∈ {1, 2, 3}`, `p ≥ 6` (always checked by [`Grid::fit`]).
/// - every point given to `fit` has grid coordinate `x_a = (y_a − origin_a)/h ∈ [1.5, p − 2.5]`
///   up to rounding; the interpolation code still clamps the stencil, so rounding cannot index
///   out of bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub dims: usize,
    pub p: usize,
    pub h: f64,
    pub origin: [f64; 3],
    /// Centre of the points' bounding box (not of the grid, whose nodes sit on the lattice).
    /// Charges `y − centre` are used instead of `y` so the channels stay small and
    /// `y_i φ₀ − φ_k` cancels less (forces are translation invariant).
    pub centre: [f64; 3],
}

impl Grid {
    /// Places a grid over the points `y` (row-major `n × dims`, all finite) as `spec` asks,
    /// sized on the [`Ladder::Fine`] ladder (the host's FFTs).
    ///
    /// `Fixed(N)`: exactly `N` nodes; the spacing is the smallest [`spacing_class`] that fits
    /// the box in `N − 5` cells (at most 1/16 more than the tightest fit). A fixed grid over a
    /// growing embedding would otherwise change its spacing, and so rebuild its kernel spectra
    /// (one FFT per kernel and parity pattern), at every iteration.
    ///
    /// `Auto { h }`: spacing `h_eff = min(h, extent/(MIN_NODES − 5))`, node count about
    /// `extent/h_eff + 5` rounded up to a class of the ladder. Once the embedding is wider
    /// than `(MIN_NODES − 5)·h`, the spacing is exactly `h`: the kernel spectra then depend on
    /// the node count alone and are computed once per size class, not once per iteration, and
    /// the accuracy is the one the caller asked for (the slack of the rounded-up size becomes
    /// margin). A smaller embedding (early iterations) gets the minimum grid filled, a finer
    /// spacing at no extra cost: there all pairs are close, where the interpolated kernel is
    /// least accurate.
    ///
    /// The nodes sit on the lattice of the spacing (`origin = k·h`, `k` an integer), the
    /// first 1.5 to 2.5 spacings below the box: a grid's nodes are then the same whatever
    /// its node count, so the ladder's slack changes no charge or potential.
    pub fn fit(y: &[f32], dims: usize, spec: GridSpec) -> Result<Grid> {
        Grid::fit_within(y, dims, spec, MAX_TOTAL_NODES)
    }

    /// [`Grid::fit`] with an adaptive grid held to at most `max_nodes` nodes in all
    /// ([`Grid::fit_box_within`]).
    pub fn fit_within(y: &[f32], dims: usize, spec: GridSpec, max_nodes: usize) -> Result<Grid> {
        let (lo, hi) = bounding_box(y, dims)?;
        Grid::fit_box_within(lo, hi, dims, spec, Ladder::Fine, max_nodes)
    }

    /// [`Grid::fit`] from a bounding box (per-axis min `lo` and max `hi`) computed elsewhere,
    /// e.g. reduced on the GPU, with node counts from `ladder`.
    pub fn fit_box(
        lo: [f64; 3],
        hi: [f64; 3],
        dims: usize,
        spec: GridSpec,
        ladder: Ladder,
    ) -> Result<Grid> {
        Grid::fit_box_within(lo, hi, dims, spec, ladder, MAX_TOTAL_NODES)
    }

    /// [`Grid::fit_box`] with an adaptive grid held to at most `max_nodes` nodes in all: a
    /// node budget (`--grid-max-nodes`) below [`MAX_TOTAL_NODES`]. Past it the node count
    /// stays at the largest class of the ladder within the budget, and the spacing grows on
    /// the ladder of [`spacing_class`]es, so that the kernel spectra are rebuilt once per
    /// 1/16 of growth rather than at every iteration. The near field
    /// ([`crate::repulse::near`]) then keeps the force error of the spacing asked for. A
    /// budget at or above [`MAX_TOTAL_NODES`] changes nothing: that cap holds every grid
    /// the same way (in 3-D with the spacing on the ladder; in 1-D and 2-D with the one that
    /// fits the box).
    pub fn fit_box_within(
        lo: [f64; 3],
        hi: [f64; 3],
        dims: usize,
        spec: GridSpec,
        ladder: Ladder,
        max_nodes: usize,
    ) -> Result<Grid> {
        let extent = (0..dims)
            .map(|a| hi[a] - lo[a])
            .fold(0.0f64, f64::max)
            .max(MIN_EXTENT);
        let (p, h) = match spec {
            GridSpec::Fixed(n) => {
                if !(MARGIN_NODES + 1..=max_nodes_per_axis(dims)).contains(&n) {
                    return Err(Error::param(
                        "grid",
                        format!(
                            "{n} nodes per axis; need {} ..= {} in {dims}-D",
                            MARGIN_NODES + 1,
                            max_nodes_per_axis(dims)
                        ),
                    ));
                }
                (n, spacing_class(extent / (n - MARGIN_NODES) as f64))
            }
            GridSpec::Auto { h } => {
                if !(h.is_finite() && h > 0.0) {
                    return Err(Error::param("h", format!("{h}; need a finite h > 0")));
                }
                let h = h.min(extent / (MIN_NODES - MARGIN_NODES) as f64);
                let want = (0..dims)
                    .map(|a| (hi[a] / h - first_node(lo[a], h) + 2.5).ceil() as usize)
                    .max()
                    .unwrap_or(MIN_NODES);
                let cap = fft_friendly_below(max_nodes_per_axis(dims));
                let p = ladder.size_class(want, dims);
                let budget = (max_nodes < MAX_TOTAL_NODES)
                    .then(|| ladder.largest_within(max_nodes, dims))
                    .filter(|&budget| p > budget);
                // `nodes` per axis with the spacing that fits the box in them, or the
                // ladder's next class up.
                let held = |nodes: usize, on_ladder: bool| {
                    let fit = extent / (nodes - MARGIN_NODES) as f64;
                    (nodes, if on_ladder { spacing_class(fit) } else { fit })
                };
                match budget {
                    // `want ≤ extent/h + 5`, so past the budget `extent/(budget − 5) > h`,
                    // and any spacing at least that fits the box in `budget` nodes.
                    Some(budget) => held(budget, true),
                    None if p <= cap => (p, h),
                    // At the cap in 3-D, as past a budget: a spacing on the ladder, so that
                    // a map still growing rebuilds its kernel spectra once per 1/16 of
                    // growth, not at every iteration (1.3M deformed digits at 160³: 9.2–9.3
                    // against 11.9–12.7 s on the GPU, the same KL). In 1-D and 2-D the
                    // spacing that fits the box exactly: there the ladder, at 1/16 or 1/64,
                    // slowed the end of `--iters auto` on 1.3M points at 2048² (KL 4.827
                    // against 4.791, one window sooner flat), though a 2048² G2G on 2
                    // threads takes 345 ms an iteration so against 119 ms on the ladder
                    // (`benches/history/2026-12-cpu.md`).
                    None => held(cap, dims == 3),
                }
            }
        };
        let mut origin = [0.0; 3];
        let mut centre = [0.0; 3];
        for a in 0..dims {
            centre[a] = 0.5 * (lo[a] + hi[a]);
            origin[a] = first_node(lo[a], h) * h;
        }
        Ok(Grid {
            dims,
            p,
            h,
            origin,
            centre,
        })
    }

    /// Number of nodes, `p^dims`.
    pub fn len(&self) -> usize {
        self.p.pow(self.dims as u32)
    }

    /// Whether the grid has no nodes (never true for a fitted grid).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Extent floor: all points equal still gets a valid (tiny) spacing.
const MIN_EXTENT: f64 = 1e-12;

/// Nodes per axis beyond the box's extent in spacings: the stencil's 1.5 on each side, and
/// up to one more where the lattice falls ([`first_node`]).
pub(crate) const MARGIN_NODES: usize = 5;

/// Lattice index (of spacing `h`) of the first node of a grid whose points start at `lo`:
/// 1.5 to 2.5 spacings below it, so its lowest point's stencil starts inside the grid.
fn first_node(lo: f64, h: f64) -> f64 {
    (lo / h - 1.5).floor()
}

/// Per-axis min and max of the points; an error if any coordinate is not finite.
fn bounding_box(y: &[f32], dims: usize) -> Result<([f64; 3], [f64; 3])> {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for row in y.chunks_exact(dims) {
        for (a, &v) in row.iter().enumerate() {
            if !v.is_finite() {
                return Err(Error::param("y", "an embedding coordinate is not finite"));
            }
            lo[a] = lo[a].min(v as f64);
            hi[a] = hi[a].max(v as f64);
        }
    }
    Ok((lo, hi))
}

/// Cubic Lagrange weights on the nodes at offsets −1, 0, 1, 2 for a point at offset `t ∈ [0, 1)`
/// from its base node (Linderman et al. 2019, eq. 9 with 4 equispaced nodes per interval).
#[inline(always)]
pub fn lagrange4(t: f64) -> [f64; 4] {
    let tm1 = t - 1.0;
    let tm2 = t - 2.0;
    let tp1 = t + 1.0;
    [
        -t * tm1 * tm2 / 6.0,
        tp1 * tm1 * tm2 / 2.0,
        -tp1 * t * tm2 / 2.0,
        tp1 * t * tm1 / 6.0,
    ]
}

/// Base node (the one at offset 0) and weights for a point at grid coordinate `x`. The base is
/// clamped to `1 ..= p − 3` so the stencil `base−1 … base+2` is always inside the grid.
#[inline(always)]
pub fn stencil(x: f64, p: usize) -> (usize, [f64; 4]) {
    let base = stencil_base(x, p);
    (base, lagrange4(x - base as f64))
}

/// The base node of [`stencil`] alone: `floor(x)` clamped to `1 ..= p − 3` (monotone in `x`).
/// Clamped below first, `x` is at least 1, where the cast's truncation is the floor: the
/// same node for every `x` (NaN included, which `max` takes to 1), without the call to libm's
/// `floor` that the baseline x86-64 target makes for `f64::floor` (S2G and G2S locate every
/// point on every axis at every iteration).
#[inline(always)]
pub fn stencil_base(x: f64, p: usize) -> usize {
    (x.max(1.0) as usize).min(p - 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_friendly(mut m: usize) -> bool {
        for f in [2, 3, 5, 7] {
            while m.is_multiple_of(f) {
                m /= f;
            }
        }
        m == 1
    }

    #[test]
    fn max_nodes_per_axis_is_the_integer_root() {
        for dims in 1..=3u32 {
            let p = max_nodes_per_axis(dims as usize);
            assert!(p.pow(dims) <= MAX_TOTAL_NODES && (p + 1).pow(dims) > MAX_TOTAL_NODES);
        }
        assert_eq!(max_nodes_per_axis(2), 2048);
    }

    #[test]
    fn fft_friendly_is_smallest_smooth_size() {
        for n in 1..3000 {
            let m = fft_friendly(n);
            assert!(m >= n && is_friendly(m), "{n} -> {m}");
            assert!((n..m).all(|k| !is_friendly(k)), "{n} -> {m} not smallest");
        }
        assert_eq!(fft_friendly(11), 12);
        assert_eq!(fft_friendly(97), 98);
        assert_eq!(fft_friendly(121), 125);
        assert_eq!(fft_friendly(167), 168);
    }

    /// The host's sizes are the 7-smooth ones with at most one factor 5 or 7, the smallest
    /// at least as large as asked.
    #[test]
    fn host_sizes_have_at_most_one_factor_five_or_seven() {
        let kept = |m: usize| odd_radices(m).is_some_and(|k| k <= 1);
        for n in 1..3000 {
            let m = host_fft_friendly(n);
            assert!(m >= n && kept(m) && is_friendly(m), "{n} -> {m}");
            assert!((n..m).all(|k| !kept(k)), "{n} -> {m} not smallest");
        }
        assert_eq!(host_fft_friendly(601), 640);
        assert_eq!(host_fft_friendly(121), 126);
        assert_eq!(host_fft_friendly(300), 320);
        assert_eq!(fft_friendly(601), 625);
    }

    #[test]
    fn size_classes_are_sparse_friendly_and_cover() {
        // (ladder, dims, most classes up to 1200 nodes, growth)
        for (ladder, dims, most, growth) in [
            (Ladder::Fine, 2, 28, 1.125),
            (Ladder::Fine, 3, 28, 1.125),
            (Ladder::Sparse, 1, 8, 1.4),
            (Ladder::Sparse, 2, 8, 1.4),
            (Ladder::Sparse, 3, 28, 1.125),
        ] {
            let classes: Vec<usize> = (1..=1200).map(|w| ladder.size_class(w, dims)).collect();
            let mut distinct = classes.clone();
            distinct.dedup();
            assert!(
                distinct.len() <= most,
                "{ladder:?} {dims}-D: {} classes up to 1200: {distinct:?}",
                distinct.len()
            );
            let smallest = ladder.smallest(dims);
            assert_eq!(classes[0], smallest);
            for (want, &p) in (1..=1200).zip(&classes) {
                assert!(p >= want.max(smallest) && is_friendly(p), "{want} -> {p}");
                assert!(
                    p <= ((want.max(smallest) as f64) * growth * 1.1) as usize + 1,
                    "{ladder:?} {dims}-D: {want} -> {p}"
                );
            }
        }
    }

    #[test]
    fn nodes_sit_on_the_lattice_whatever_their_count() {
        let y: Vec<f32> = vec![-3.3, 1.7, 27.9, -2.2, 0.4, 0.1];
        let spec = GridSpec::Auto { h: 0.5 };
        let (lo, hi) = bounding_box(&y, 2).unwrap();
        let fine = Grid::fit_box(lo, hi, 2, spec, Ladder::Fine).unwrap();
        let sparse = Grid::fit_box(lo, hi, 2, spec, Ladder::Sparse).unwrap();
        assert!(sparse.p > fine.p, "{} {}", sparse.p, fine.p);
        assert_eq!((fine.origin, fine.h), (sparse.origin, sparse.h));
        assert_eq!(fine.centre, sparse.centre);
        for a in 0..2 {
            let k = fine.origin[a] / fine.h;
            assert_eq!(k, k.round(), "origin {} is off the lattice", fine.origin[a]);
        }
    }

    #[test]
    fn lagrange_reproduces_cubics() {
        for &t in &[0.0, 0.2, 0.5, 0.99] {
            let w = lagrange4(t);
            let f = |x: f64| 2.0 - x + 0.5 * x * x - 0.3 * x * x * x;
            let interp: f64 = (0..4).map(|k| w[k] * f(k as f64 - 1.0)).sum();
            assert!((interp - f(t)).abs() < 1e-12);
        }
    }

    #[test]
    fn auto_grid_keeps_h_and_covers_points() {
        let y: Vec<f32> = vec![-3.0, 1.0, 27.5, -2.0, 0.0, 0.0];
        let g = Grid::fit(&y, 2, GridSpec::Auto { h: 0.5 }).unwrap();
        assert_eq!(g.h, 0.5);
        // x from −3 (lattice index −6, first node −8) to 27.5 (index 55): 63.5 + 2.5 nodes.
        assert_eq!(g.origin[0], -4.0);
        assert_eq!(g.p, Ladder::Fine.size_class(66, 2));
        for row in y.chunks(2) {
            for (a, &v) in row.iter().enumerate() {
                let x = (v as f64 - g.origin[a]) / g.h;
                assert!(x >= 1.5 - 1e-9 && x <= g.p as f64 - 2.5 + 1e-9, "{x}");
            }
        }
        let tiny = [0.0f32, 1e-5, 3e-5];
        let g = Grid::fit(&tiny, 1, GridSpec::Auto { h: 0.5 }).unwrap();
        assert_eq!(g.p, MIN_NODES);
        assert!((g.h - 3e-5 / (MIN_NODES - MARGIN_NODES) as f64).abs() < 1e-9);
        let small = [0.0f32, 10.0];
        let g = Grid::fit(&small, 1, GridSpec::Auto { h: 0.5 }).unwrap();
        assert_eq!(
            (g.p, g.h),
            (MIN_NODES, 10.0 / (MIN_NODES - MARGIN_NODES) as f64)
        );
        for points in [&tiny[..], &small[..]] {
            let g = Grid::fit(points, 1, GridSpec::Auto { h: 0.5 }).unwrap();
            for &v in points {
                let x = (v as f64 - g.origin[0]) / g.h;
                assert!(x >= 1.5 - 1e-6 && x <= g.p as f64 - 2.5 + 1e-6, "{x}");
            }
        }
    }

    #[test]
    fn fixed_grid_fills_box_and_caps() {
        let y: Vec<f32> = (0..30).map(|i| i as f32 * 0.37 - 4.0).collect();
        let g = Grid::fit(&y, 3, GridSpec::Fixed(40)).unwrap();
        assert_eq!(g.p, 40);
        // Each axis spans 9 rows of 3 values spaced 0.37: extent 27 · 0.37 over N − 5 cells,
        // rounded up to the spacing ladder.
        let tight = 27.0 * 0.37 / 35.0;
        assert!(
            g.h >= tight - 1e-9 && g.h <= tight * SPACING_STEP,
            "{}",
            g.h
        );
        // A slightly larger box keeps the same spacing (and so the same kernel spectra).
        let wider: Vec<f32> = y.iter().map(|v| v * 1.0001).collect();
        assert_eq!(Grid::fit(&wider, 3, GridSpec::Fixed(40)).unwrap().h, g.h);
        for row in y.chunks(3) {
            for (a, &v) in row.iter().enumerate() {
                let x = (v as f64 - g.origin[a]) / g.h;
                assert!(x >= 1.5 - 1e-9 && x <= g.p as f64 - 2.5 + 1e-9, "{x}");
            }
        }
        assert!(Grid::fit(&y, 3, GridSpec::Fixed(5)).is_err());
        assert!(Grid::fit(&y, 3, GridSpec::Fixed(1000)).is_err());
        assert!(Grid::fit(&y, 2, GridSpec::Auto { h: 0.0 }).is_err());
        // At the cap a 2-D grid's spacing fits the box exactly; a 3-D grid's steps on the
        // ladder as the box grows, as a fixed grid's.
        let huge = [-1e6f32, -1e6, 1e6, 1e6];
        let g = Grid::fit(&huge, 2, GridSpec::Auto { h: 0.5 }).unwrap();
        assert!(g.len() <= MAX_TOTAL_NODES && g.h > 0.5);
        assert_eq!(g.h, 2e6 / (g.p - MARGIN_NODES) as f64);
        let huge3 = [-1e4f32, -1e4, -1e4, 1e4, 1e4, 1e4];
        let g3 = Grid::fit(&huge3, 3, GridSpec::Auto { h: 0.5 }).unwrap();
        assert!(g3.len() <= MAX_TOTAL_NODES && g3.h > 0.5);
        assert_eq!(g3.h, spacing_class(g3.h));
        let wider: Vec<f32> = huge3.iter().map(|v| v * 1.0001).collect();
        assert_eq!(
            Grid::fit(&wider, 3, GridSpec::Auto { h: 0.5 }).unwrap().h,
            g3.h
        );
        for &v in &huge3 {
            let x = (v as f64 - g3.origin[0]) / g3.h;
            assert!(x >= 1.5 - 1e-9 && x <= g3.p as f64 - 2.5 + 1e-9, "{x}");
        }
        for &v in &huge {
            let x = (v as f64 - g.origin[0]) / g.h;
            assert!(x >= 1.5 - 1e-9 && x <= g.p as f64 - 2.5 + 1e-9, "{x}");
        }
        assert!(Grid::fit(&[0.0, f32::NAN], 1, GridSpec::Auto { h: 0.5 }).is_err());
    }

    /// Past a node budget an adaptive grid keeps the budget's largest class, its spacing
    /// grows on the spacing ladder and still covers the points; below it, or with the
    /// budget at the cap, the grid is the one without a budget.
    #[test]
    fn node_budget_holds_the_count_and_grows_the_spacing() {
        for ladder in [Ladder::Fine, Ladder::Sparse] {
            let budget = 300_000;
            let cap = ladder.largest_within(budget, 2);
            assert!(cap * cap <= budget);
            assert!(ladder.size_class(cap + 1, 2).pow(2) > budget);
            for half in [10.0, 60.0, 200.0, 900.0] {
                let (lo, hi) = ([-half, -0.5 * half, 0.0], [half, 0.7 * half, 0.0]);
                let spec = GridSpec::Auto { h: 0.35 };
                let free = Grid::fit_box(lo, hi, 2, spec, ladder).unwrap();
                let held = Grid::fit_box_within(lo, hi, 2, spec, ladder, budget).unwrap();
                if free.p <= cap {
                    assert_eq!(held, free);
                    continue;
                }
                assert_eq!(held.p, cap);
                assert!(held.h > 0.35);
                assert_eq!(held.h, spacing_class(held.h));
                for a in 0..2 {
                    for v in [lo[a], hi[a]] {
                        let x = (v - held.origin[a]) / held.h;
                        assert!(x >= 1.5 - 1e-9 && x <= held.p as f64 - 2.5 + 1e-9, "{x}");
                    }
                }
            }
            let (lo, hi) = ([-1e4, -1e4, 0.0], [1e4, 1e4, 0.0]);
            let spec = GridSpec::Auto { h: 0.35 };
            assert_eq!(
                Grid::fit_box_within(lo, hi, 2, spec, ladder, MAX_TOTAL_NODES).unwrap(),
                Grid::fit_box(lo, hi, 2, spec, ladder).unwrap()
            );
        }
        assert_eq!(
            Ladder::Sparse.largest_within(1, 2),
            Ladder::Sparse.smallest(2)
        );
    }

    #[test]
    fn stencil_stays_inside() {
        for &x in &[-0.3, 0.0, 0.999, 1.0, 5.5, 17.0, 17.9, 30.0] {
            let (b, _) = stencil(x, 20);
            assert!(b >= 1 && b + 2 <= 19);
        }
    }
}
