//! P, the symmetric joint probabilities, in the layout of the backend that reads it: the one
//! type every stage after the affinities passes around.

use super::{Csb, Hyb, HybGpu, SparseError};
use crate::affinity::{p_log_p, Affinities};
use crate::gpu::Gpu;
use crate::Result;

/// P with the two constants the KL needs, in one of its layouts.
///
/// The affinity stage makes it where it ran ([`P::from_csr`] on the host, [`P::from_hyb`]
/// on the device, [`P::from_hyb_blocks`] over several GPUs); the backend then converts it,
/// once, into the layout its attraction reads ([`P::into_csb`] for cpu and hybrid,
/// [`P::into_hyb`] for gpu; the GPUs' blocks as they are).
pub struct P {
    layout: Layout,
    /// Σ p ln p of the symmetric P (the constant part of KL(P‖Q)); computed with the
    /// conversion out of CSR, read from CSR itself before (see [`P::p_log_p`]).
    p_log_p: f64,
    /// Non-zeros of the symmetric P (both triangles).
    nnz: usize,
}

/// Where and how P is stored.
pub enum Layout {
    /// Canonical CSR on the host, as the host affinity stage (points or graph) builds it.
    Csr(Affinities),
    /// Compressed sparse blocks on the host, for the CPU attraction.
    Csb(Csb),
    /// HYB on the device, for the GPU attraction (built there by the GPU affinity stage).
    Hyb(HybGpu),
    /// HYB in row blocks, block r on GPU r, in order: P of a run over several GPUs, made
    /// there by the GPU affinity stage ([`crate::affinity::gpu::affinities_device`]).
    HybBlocks(Vec<HybGpu>),
}

impl Layout {
    fn name(&self) -> &'static str {
        match self {
            Layout::Csr(_) => "CSR",
            Layout::Csb(_) => "CSB",
            Layout::Hyb(_) => "HYB on the device",
            Layout::HybBlocks(_) => "HYB row blocks on several GPUs",
        }
    }
}

impl P {
    /// P from the host affinity stage (canonical CSR).
    pub fn from_csr(csr: Affinities) -> P {
        P {
            p_log_p: f64::NAN,
            nnz: csr.nnz(),
            layout: Layout::Csr(csr),
        }
    }

    /// P from the GPU affinity stage, with its Σ p ln p and non-zeros.
    pub fn from_hyb(hyb: HybGpu, p_log_p: f64, nnz: usize) -> P {
        P {
            layout: Layout::Hyb(hyb),
            p_log_p,
            nnz,
        }
    }

    /// P from the GPU affinity stage in row blocks on several GPUs (block r on GPU r), with
    /// the whole P's Σ p ln p and non-zeros.
    pub fn from_hyb_blocks(blocks: Vec<HybGpu>, p_log_p: f64, nnz: usize) -> P {
        P {
            layout: Layout::HybBlocks(blocks),
            p_log_p,
            nnz,
        }
    }

    /// For the cpu and hybrid backends: CSB of block size `beta` (the backends take
    /// [`Csb::default_beta`] for their workers). P must be on the host.
    pub fn into_csb(self, beta: usize) -> Result<P> {
        let p_log_p = self.p_log_p();
        let layout = match self.layout {
            Layout::Csr(csr) => Layout::Csb(Csb::from_csr(&csr, beta)?),
            Layout::Csb(csb) => Layout::Csb(csb),
            Layout::Hyb(_) | Layout::HybBlocks(_) => {
                return Err(wrong_layout("CSB", &self.layout).into())
            }
        };
        Ok(P {
            layout,
            p_log_p,
            nnz: self.nnz,
        })
    }

    /// For the gpu backend: HYB on the device, uploaded from CSR when the affinities ran on
    /// the host (graph mode).
    pub fn into_hyb(self, gpu: &'static Gpu) -> Result<P> {
        let p_log_p = self.p_log_p();
        let layout = match self.layout {
            Layout::Csr(csr) => Layout::Hyb(HybGpu::new(gpu, &Hyb::from_csr(&csr, None)?)?),
            Layout::Hyb(hyb) => Layout::Hyb(hyb),
            Layout::Csb(_) | Layout::HybBlocks(_) => {
                return Err(wrong_layout("HYB", &self.layout).into())
            }
        };
        Ok(P {
            layout,
            p_log_p,
            nnz: self.nnz,
        })
    }

    /// The layout itself, P taken apart (the constants read first).
    pub fn into_layout(self) -> Layout {
        self.layout
    }

    /// The CSB layout ([`P::into_csb`] first).
    pub fn csb(&self) -> Result<&Csb, SparseError> {
        match &self.layout {
            Layout::Csb(csb) => Ok(csb),
            other => Err(wrong_layout("CSB", other)),
        }
    }

    /// The device HYB layout ([`P::into_hyb`] first).
    pub fn hyb(&self) -> Result<&HybGpu, SparseError> {
        match &self.layout {
            Layout::Hyb(hyb) => Ok(hyb),
            other => Err(wrong_layout("HYB", other)),
        }
    }

    /// Σ p ln p (summed over CSR while P is held there, a parallel pass over its values).
    pub fn p_log_p(&self) -> f64 {
        match &self.layout {
            Layout::Csr(csr) => p_log_p(csr),
            _ => self.p_log_p,
        }
    }

    /// Stored non-zeros.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// Rows (points).
    pub fn n(&self) -> usize {
        match &self.layout {
            Layout::Csr(csr) => csr.rows(),
            Layout::Csb(csb) => csb.n(),
            Layout::Hyb(hyb) => hyb.n(),
            Layout::HybBlocks(blocks) => blocks.iter().map(HybGpu::n).sum(),
        }
    }

    /// The layout as it is now.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

fn wrong_layout(want: &str, have: &Layout) -> SparseError {
    SparseError::Invariant {
        what: format!("P is needed in {want} but is held in {}", have.name()),
    }
}
