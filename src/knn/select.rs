//! Bounded selection of the `keep` smallest (value, index) pairs out of a stream.
//!
//! A candidate buffer with a rejection threshold (the reservoir of FAISS' block selection):
//! values at or above the current `keep`-th smallest are rejected by one compare; accepted
//! ones are appended, and when the buffer is full a quickselect shrinks it back to `keep`
//! and tightens the threshold. Amortised O(1) per accepted candidate, against O(log keep)
//! for a binary heap or O(keep) for sorted insertion.
//!
//! Slack: the values may carry a rounding error of up to `slack / 2` (GEMM-computed
//! distances). Then every candidate whose value is below the `keep`-th smallest plus `slack`
//! may truly belong to the best `keep`, so the selector keeps all of those (often a few
//! more than `keep`), and the caller re-ranks them by exact values. With `slack = 0` it is a
//! plain top-`keep` selection.
//!
//! Ties: a candidate equal to the threshold is accepted, so among equal values the final
//! selection by (value, index) keeps the smaller indices whatever the arrival order.
//!
//! Memory: the buffer grows while many candidates sit within `slack` of the threshold (mass
//! ties, e.g. thousands of duplicates), up to `max_cap`; past it the selector falls back to
//! the plain top `keep` by (value, index).

use super::{by_dist_then_index, Key};

/// The `keep` smallest values seen so far, with their indices.
///
/// # Invariants
/// - `buf.len() < cap ≤ max_cap` between calls, `keep < cap`
/// - every rejected candidate is > `thr`; once `thr` is finite, at least `keep` buffered
///   ones are ≤ `thr - slack`
pub(crate) struct TopK {
    keep: usize,
    cap: usize,
    max_cap: usize,
    slack: f32,
    thr: f32,
    buf: Vec<(f32, u32)>,
}

impl TopK {
    /// A selector of the `keep` smallest; `cap` (> keep) bounds the buffer.
    pub(crate) fn new(keep: usize, cap: usize) -> Self {
        debug_assert!(keep >= 1 && cap > keep);
        TopK {
            keep,
            cap,
            max_cap: cap.max(64 * keep).max(4096),
            slack: 0.0,
            thr: f32::INFINITY,
            buf: Vec::with_capacity(cap),
        }
    }

    /// Empties the selector for reuse, with a new slack (≥ 0).
    pub(crate) fn reset(&mut self, slack: f32) {
        self.buf.clear();
        self.slack = slack;
        self.thr = f32::INFINITY;
    }

    /// Values above this can never be among the `keep` smallest (within the slack).
    #[inline(always)]
    pub(crate) fn threshold(&self) -> f32 {
        self.thr
    }

    /// Offers a candidate whose value is already known to be ≤ [`Self::threshold`].
    #[inline(always)]
    pub(crate) fn push(&mut self, v: f32, i: u32) {
        self.buf.push((v, i));
        if self.buf.len() == self.cap {
            self.compact();
        }
    }

    /// Offers a candidate, rejecting it if it cannot be among the best.
    #[inline(always)]
    pub(crate) fn offer(&mut self, v: f32, i: u32) {
        if v <= self.thr {
            self.push(v, i);
        }
    }

    fn compact(&mut self) {
        let kth = self.keep - 1;
        self.buf.select_nth_unstable_by(kth, by_dist_then_index);
        let vk = self.buf[kth].0;
        self.thr = vk + self.slack;
        if self.slack > 0.0 {
            // keep the ones within the slack; they sit after position kth
            let thr = self.thr;
            let mut w = self.keep;
            for r in self.keep..self.buf.len() {
                if self.buf[r].0 <= thr {
                    self.buf.swap(w, r);
                    w += 1;
                }
            }
            self.buf.truncate(w);
            if self.buf.len() * 2 > self.cap {
                if self.cap < self.max_cap {
                    self.cap = (self.cap * 2).min(self.max_cap);
                } else {
                    // mass ties beyond max_cap: plain top-keep
                    self.buf.truncate(self.keep);
                    self.thr = vk;
                }
            }
        } else {
            self.buf.truncate(self.keep);
        }
    }

    /// The kept candidates into `cand` with their keys to `x` (squared distances for
    /// [`Key::SqEuclidean`]) measured directly (`row_of(i)` is candidate i's row), best
    /// first by (key, index): the GEMM's rounded keys only chose them, and exact ties fall
    /// by index as brute force would.
    pub(crate) fn refine<'a>(
        &mut self,
        key: Key,
        x: &[f32],
        row_of: impl Fn(u32) -> &'a [f32],
        cand: &mut Vec<(f32, u32)>,
    ) {
        cand.clear();
        cand.extend(
            self.sorted()
                .iter()
                .map(|&(_, i)| (key.eval(x, row_of(i)), i)),
        );
        cand.sort_unstable_by(by_dist_then_index);
    }

    /// The (at least `min(keep, seen)`) candidates kept, in increasing (value, index) order:
    /// with a slack, all those below the `keep`-th smallest plus the slack.
    pub(crate) fn sorted(&mut self) -> &[(f32, u32)] {
        if self.buf.len() > self.keep {
            self.compact();
        }
        self.buf.sort_unstable_by(by_dist_then_index);
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn keeps_the_smallest_with_ties_by_index() {
        let mut rng = StdRng::seed_from_u64(7);
        for (n, keep) in [(10usize, 3usize), (1000, 90), (5000, 1)] {
            // few distinct values, so ties are everywhere
            let vals: Vec<f32> = (0..n).map(|_| rng.random_range(0..50) as f32).collect();
            let mut t = TopK::new(keep, 2 * keep + 1);
            // arrival order does not matter: offer in a scrambled order
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&i| (i * 7919) % n.max(1));
            order.dedup();
            for &i in &order {
                t.offer(vals[i], i as u32);
            }
            let mut all: Vec<(f32, u32)> = vals
                .iter()
                .enumerate()
                .map(|(i, &v)| (v, i as u32))
                .collect();
            all.sort_by(by_dist_then_index);
            all.truncate(keep);
            assert_eq!(t.sorted(), &all[..], "n={n} keep={keep}");
        }
    }

    #[test]
    fn slack_keeps_everything_that_may_be_in_the_top() {
        let mut rng = StdRng::seed_from_u64(8);
        let vals: Vec<f32> = (0..3000).map(|_| rng.random_range(0.0..100.0)).collect();
        let (keep, slack) = (50usize, 0.5f32);
        let mut t = TopK::new(keep, keep + 20);
        t.reset(slack);
        for (i, &v) in vals.iter().enumerate() {
            t.offer(v, i as u32);
        }
        let mut sorted = vals.clone();
        sorted.sort_by(f32::total_cmp);
        let kth = sorted[keep - 1];
        let want = vals.iter().filter(|&&v| v <= kth + slack).count();
        let got = t.sorted();
        assert_eq!(got.len(), want);
        assert!(got.iter().all(|&(v, _)| v <= kth + slack));
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
