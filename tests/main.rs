//! Integration tests, one binary (lean to build).

/// Bad inputs and faults found by trying the tool as a new user would (issue 17).
mod bad_input;
/// The command-line tool: outputs, bad input, exit codes.
mod cli;
/// The optimisation's controls: exaggeration phases and momentum (their old flag names
/// too), snapshots and their animation.
mod controls;
/// How far a run is from convergence, and `--iters auto`.
mod convergence;
/// `--deterministic`: runs that repeat bit for bit on every backend.
mod deterministic;
/// Whole embeddings of real data (the embedded digits) and of graphs.
mod e2e;
/// Exact t-SNE: affinities over every pair (`--affinities exact`).
mod exact_tsne;
/// A short fuzz pass over every input reader: mutated seeds, no panic, no allocation far
/// beyond the input (libFuzzer's longer runs: `scripts/fuzz.sh`).
mod fuzz_readers;
/// Gaussian mixtures: `sgtsne gmm`, `-k auto`, `embed --clusters`, scikit-learn's figures.
mod gmm;
/// The analytic gradient against finite differences of KL(P‖Q).
mod gradient;
/// AnnData .h5ad in and out, against fixtures written by the anndata package.
mod h5ad;
/// Heavy-tailed kernels (`--dof`).
mod heavy_tails;
/// `--init FILE`, `-o -` and `.tsv` outputs, the no-output warning, completions and man.
mod init_output;
/// Ctrl-C during `embed`: stop after the iteration, discard or save, a second one at once.
mod interrupts;
/// Ten embeddings in one process: memory and time stay flat (ignored; slow).
mod long_run;
/// `--gpus N`: the gpu backend over several GPUs (needs them; skipped on fewer).
mod multi_gpu;
/// Multiscale perplexity and the cap on neighbours.
mod multiscale;
/// The FFT repulsion's near field (`--near-field`).
mod near_field;
/// Neighbours and affinities computed elsewhere (`--knn-from`, `--affinities`) and the
/// `knn` tool.
mod neighbors;
/// The command-line reference page (`docs/reference/cli.md`) against `sgtsne reference`.
mod reference;
/// The grid-size sweep: a tiny sweep's CSV and charts, configuration errors.
mod sweep;
/// New points into a saved map: `embed --save-model`, `transform`, bad models.
mod transform;
/// `sgtsne view`: the page written for each input kind, and bad input refused (the page
/// in a browser: `tests/browser/`, `scripts/test/browser.sh`).
mod view;
