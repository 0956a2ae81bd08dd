//! The extension's run path: NCCL from NVIDIA's pip wheel (`sgtsne[cuda]`) is opened as
//! `libnccl.so`, a name the dynamic loader finds through the run path of the library that
//! asks, relative to the installed extension (`site-packages/sgtsne/`). The other CUDA
//! libraries are loaded by the package itself (`sgtsne/_cuda.py`).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN/../nvidia/nccl/lib");
}
