//! Stages 4 and 5 without points (DESIGN §1.4): P from a sparse weighted graph, λ-rescaled
//! as SG-t-SNE does, or P given as it is. Neither has coordinates, so there is no PCA, no
//! kNN and no PCA initialisation: what the point stages would leave stays empty.

use super::{EmbedParams, Prepared};
use crate::affinity::{self, GraphParams};
use crate::init::InitKind;
use crate::report::StageSeconds;
use crate::sparse::P;
use crate::Result;

/// Stages 4 and 5 in graph mode: P from the graph, λ-rescaled (SG-t-SNE); the
/// initialisation becomes random (a graph has no coordinates to take a PCA of).
pub(super) fn prepare_graph(
    graph: &sprs::CsMat<f64>,
    params: &mut EmbedParams,
    seconds: &mut StageSeconds,
) -> Result<Prepared> {
    let t = seconds.start("affinities");
    let gp = GraphParams {
        lambda: params.lambda,
        ..Default::default()
    };
    let p = affinity::graph_affinities(graph, &gp)?;
    seconds.affinities = t.elapsed().as_secs_f64();
    Ok(without_points(p, params, Vec::new()))
}

/// Stages 4 and 5 with P given: checked, symmetrised and normalised where it is not (a
/// note says so), the initialisation random as for a graph.
pub(super) fn prepare_affinities(
    given: &sprs::CsMat<f64>,
    params: &mut EmbedParams,
    seconds: &mut StageSeconds,
) -> Result<Prepared> {
    let t = seconds.start("affinities");
    let (p, notes) = affinity::given(given)?;
    seconds.affinities = t.elapsed().as_secs_f64();
    Ok(without_points(p, params, notes))
}

/// What stages 2–4 leave when P comes without points (a graph, affinities): no neighbours
/// and no PCA, so the initialisation becomes random.
fn without_points(
    p: affinity::Affinities,
    params: &mut EmbedParams,
    notes: Vec<String>,
) -> Prepared {
    if params.init == InitKind::Pca {
        params.init = InitKind::Random;
    }
    Prepared {
        p: P::from_csr(p),
        points: None,
        reduced: false,
        basis: None,
        neighbors: None,
        knn: None,
        order: None,
        notes,
        pca_init: None,
    }
}
