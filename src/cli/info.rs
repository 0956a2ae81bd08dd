//! `sgtsne info`: what this build can use on this machine.

use anyhow::Result;

pub fn run() -> Result<()> {
    println!("sgtsne {}", env!("CARGO_PKG_VERSION"));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("cpu threads: {cores} (change with --threads)");
    let auto = match sgtsne::gpu::probe() {
        Ok(d) => {
            println!(
                "gpu: {} (compute capability {}.{}, {:.1} GiB)",
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                d.total_memory as f64 / (1u64 << 30) as f64
            );
            "gpu"
        }
        Err(reason) => {
            println!("gpu: no usable GPU: {reason}");
            "cpu"
        }
    };
    println!("backends: cpu, gpu, hybrid (gpu and hybrid need the GPU); auto picks {auto}");
    Ok(())
}
