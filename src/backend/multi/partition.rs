//! Which points each GPU of a run over several owns: contiguous row blocks of one length
//! (NCCL's all-gather moves equal blocks), the last one shorter.

use std::ops::Range;

use crate::{Error, Result};

/// n points split over `world` GPUs in blocks of [`Partition::block`] rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    n: usize,
    world: usize,
    block: usize,
}

impl Partition {
    /// Blocks of ⌈n / world⌉ rows; every GPU must own at least one point, which holds for
    /// n > world · (world − 1) (far below any input worth several GPUs).
    pub fn new(n: usize, world: usize) -> Result<Self> {
        if world == 0 {
            return Err(Error::param("gpus", "must be at least 1"));
        }
        let block = n.div_ceil(world);
        if n == 0 || (world - 1) * block >= n {
            return Err(Error::param(
                "gpus",
                format!(
                    "{world} GPUs cannot share {n} points (each needs a block of its own); \
                     use --gpus 1"
                ),
            ));
        }
        Ok(Partition { n, world, block })
    }

    /// Points in all.
    pub fn n(&self) -> usize {
        self.n
    }

    /// GPUs.
    pub fn world(&self) -> usize {
        self.world
    }

    /// Rows of every block as it travels (the last block padded to it).
    pub fn block(&self) -> usize {
        self.block
    }

    /// The points GPU `rank` owns.
    pub fn rows(&self, rank: usize) -> Range<usize> {
        let lo = (rank * self.block).min(self.n);
        lo..((rank + 1) * self.block).min(self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks cover 0..n once, in order, none empty, each at most `block` long, for
    /// every n and world size around the edges.
    #[test]
    fn blocks_cover_every_point_once() {
        for world in 1..=8 {
            for n in 1..200 {
                let Ok(part) = Partition::new(n, world) else {
                    assert!(n <= world * (world - 1), "n {n}, world {world} refused");
                    continue;
                };
                let mut next = 0;
                for rank in 0..world {
                    let rows = part.rows(rank);
                    assert_eq!(rows.start, next, "n {n}, world {world}, rank {rank}");
                    assert!(!rows.is_empty() && rows.len() <= part.block());
                    next = rows.end;
                }
                assert_eq!(next, n);
                assert!(part.block() * world >= n);
            }
        }
    }

    #[test]
    fn too_few_points_are_refused_by_name() {
        let e = Partition::new(3, 4).unwrap_err().to_string();
        assert!(e.contains("gpus") && e.contains("4 GPUs"), "{e}");
        assert!(Partition::new(10, 0).is_err());
        assert_eq!(Partition::new(10, 1).unwrap().rows(0), 0..10);
    }
}
