//! `sgtsne info`: what this build can use on this machine, and what a file holds.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use sgtsne::io::{self, h5ad};

use super::args::InfoArgs;

pub fn run(args: InfoArgs) -> Result<()> {
    match &args.file {
        Some(file) => describe(file, &args),
        None => machine(),
    }
}

/// What `file` holds; with `--read`, the points read as `embed` reads them, timed.
fn describe(file: &Path, args: &InfoArgs) -> Result<()> {
    let is_h5ad = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("h5ad"));
    let mut out = std::io::stdout().lock();
    if is_h5ad {
        writeln!(out, "{} (AnnData):", file.display())?;
        for (element, what) in h5ad::describe(file)? {
            writeln!(out, "  {element}: {what}")?;
        }
    }
    if !args.read && is_h5ad {
        return Ok(());
    }
    let t = Instant::now();
    let (source, shape, stored) = if is_h5ad {
        let read = h5ad::read_h5ad_points(file, &h5ad::Rep::from_flag(args.use_rep.as_deref()))?;
        let stored = match &read.matrix {
            h5ad::H5adMatrix::Sparse(rows) => Some(rows.nnz()),
            h5ad::H5adMatrix::Dense(_) => None,
        };
        (read.source, read.matrix.shape(), stored)
    } else {
        let points = io::read_points(file)?;
        ("points".to_string(), (points.n, points.d), None)
    };
    let seconds = t.elapsed().as_secs_f64();
    let sparse = stored.map_or(String::new(), |nnz| {
        format!(", sparse, {nnz} stored values")
    });
    writeln!(
        out,
        "read {source}: {} × {}{sparse} in {seconds:.2} s, peak memory {}",
        shape.0,
        shape.1,
        sgtsne::report::peak_rss_bytes().map_or("unknown".into(), |b| format!(
            "{:.2} GiB",
            b as f64 / (1u64 << 30) as f64
        ))
    )?;
    Ok(())
}

/// The build, the CPU threads and the GPU.
fn machine() -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "sgtsne {}", env!("CARGO_PKG_VERSION"))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    writeln!(out, "cpu threads: {cores} (change with --threads)")?;
    let auto = match sgtsne::gpu::probe() {
        Ok(d) => {
            writeln!(
                out,
                "gpu: {} (compute capability {}.{}, {:.1} GiB)",
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                d.total_memory as f64 / (1u64 << 30) as f64
            )?;
            let count = sgtsne::gpu::device_count().unwrap_or(1);
            if count > 1 {
                let nccl = match sgtsne::gpu::comm::nccl_present() {
                    true => "NCCL found",
                    false => "NCCL (libnccl.so) not found, which --gpus above 1 needs",
                };
                writeln!(
                    out,
                    "gpus: {count} (--backend gpu uses all from 1M points, --gpus N to choose); {nccl}"
                )?;
            }
            "gpu"
        }
        Err(reason) => {
            writeln!(out, "gpu: no usable GPU: {reason}")?;
            "cpu"
        }
    };
    writeln!(
        out,
        "backends: cpu, gpu, hybrid (gpu and hybrid need the GPU); auto picks {auto}"
    )?;
    Ok(())
}
