//! Each query block's references as runs of reference chunks, in the order the sweep reads
//! them: its own chunk first, each chunk of its probe cells once.

use rayon::prelude::*;

use super::Cells;

impl Cells {
    /// The references of each block of `block` consecutive positions, as runs of `chunk`
    /// rows ([`Cells::runs_of`]): (first chunk, count) pairs, flattened, and `run_off`
    /// (blocks + 1 entries, in runs).
    pub fn block_runs(
        &self,
        probes: &[Vec<u32>],
        block: usize,
        chunk: usize,
    ) -> (Vec<i32>, Vec<i32>) {
        let per_block: Vec<Vec<(usize, usize)>> = probes
            .par_iter()
            .enumerate()
            .map(|(b, cells)| self.runs_of(b * block, cells, chunk))
            .collect();
        flatten_runs(&per_block)
    }

    /// The runs of `chunk` rows of the block whose first position is `p0` and whose probe
    /// cells are `probes` (its own among them): (first chunk, count) pairs covering the
    /// cells, each chunk once, starting at the chunk of its own first position and wrapping
    /// around, so that its lists fill with near points first.
    pub fn runs_of(&self, p0: usize, probes: &[u32], chunk: usize) -> Vec<(usize, usize)> {
        let mut ranges: Vec<(usize, usize)> = probes
            .iter()
            .map(|&m| {
                let (a, e) = (self.offsets[m as usize], self.offsets[m as usize + 1]);
                (a / chunk, e.div_ceil(chunk))
            })
            .filter(|(a, e)| a < e)
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (a, e) in ranges {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((a, e)),
            }
        }
        // Start at the run holding the block's own first chunk.
        // (The own cell is always probed, so some run holds that chunk.)
        let own = p0 / chunk;
        let Some(start) = merged.iter().position(|&(a, e)| a <= own && own < e) else {
            return merged.iter().map(|&(a, e)| (a, e - a)).collect();
        };
        let (a, e) = merged[start];
        let mut runs = vec![(own, e - own)];
        runs.extend(merged[start + 1..].iter().map(|&(a, e)| (a, e - a)));
        runs.extend(merged[..start].iter().map(|&(a, e)| (a, e - a)));
        if own > a {
            runs.push((a, own - a));
        }
        runs
    }
}

/// Blocks' runs ((first chunk, count) each) flattened as the sweep reads them: the pairs
/// in one list and each block's first run (blocks + 1 offsets, in runs).
pub fn flatten_runs(per_block: &[Vec<(usize, usize)>]) -> (Vec<i32>, Vec<i32>) {
    let mut runs = Vec::with_capacity(2 * per_block.iter().map(Vec::len).sum::<usize>());
    let mut run_off = Vec::with_capacity(per_block.len() + 1);
    run_off.push(0i32);
    for block_runs in per_block {
        for &(first, count) in block_runs {
            runs.push(first as i32);
            runs.push(count as i32);
        }
        run_off.push((runs.len() / 2) as i32);
    }
    (runs, run_off)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every block's runs start at its own chunk, name no chunk twice, and cover every
    /// position of its cells' probe cells.
    #[test]
    fn block_runs_cover_the_probe_cells_once() {
        let labels: Vec<u32> = (0..1000u32).map(|i| (i * 7 + i / 13) % 9).collect();
        let cells = Cells::sort(&labels, 9);
        let (block, chunk) = (128, 32);
        // Each block probes its own cells and the cells 4 further on.
        let probes: Vec<Vec<u32>> = (0..1000usize.div_ceil(block))
            .map(|b| {
                let own = cells.cell_of(b * block)..=cells.cell_of(((b + 1) * block).min(1000) - 1);
                let mut p: Vec<u32> = own.flat_map(|l| [l as u32, (l as u32 + 4) % 9]).collect();
                p.sort_unstable();
                p.dedup();
                p
            })
            .collect();
        let (runs, run_off) = cells.block_runs(&probes, block, chunk);
        assert_eq!(run_off.len(), 1000usize.div_ceil(block) + 1);
        for b in 0..run_off.len() - 1 {
            let pairs = &runs[2 * run_off[b] as usize..2 * run_off[b + 1] as usize];
            assert_eq!(
                pairs[0] as usize,
                b * block / chunk,
                "block {b} starts elsewhere"
            );
            let mut chunks: Vec<i32> = pairs
                .chunks_exact(2)
                .flat_map(|r| r[0]..r[0] + r[1])
                .collect();
            let all = chunks.len();
            chunks.sort_unstable();
            chunks.dedup();
            assert_eq!(chunks.len(), all, "block {b} names a chunk twice");
            let (p0, p1) = (b * block, ((b + 1) * block).min(1000));
            for p in p0..p1 {
                assert!(probes[b].contains(&(cells.cell_of(p) as u32)));
            }
            {
                for &m in &probes[b] {
                    let (a, e) = (cells.offsets[m as usize], cells.offsets[m as usize + 1]);
                    for r in a..e {
                        assert!(
                            chunks.binary_search(&((r / chunk) as i32)).is_ok(),
                            "block {b}: row {r} of probe cell {m} missing"
                        );
                    }
                }
            }
        }
    }
}
