//! Stage 1b, the input's values themselves: points that are all one point are refused
//! before any work, many exact copies are warned about, and the values are brought into the
//! range where squared distances fit f32, so that no later stage overflows on the data's
//! units.

use super::Input;
use crate::prep;
use crate::progress::Progress;
use crate::report::InputInfo;
use crate::{Error, Result};

/// Copies make up at least this fraction of the points before a run warns about them: a
/// few are harmless (each set collapses onto one spot, as it should), but as they grow
/// toward k per point a copy's neighbours become its own copies only.
const DUPLICATES_WARNED: f64 = 0.01;

/// What the report says of `input` named `name` before the screening fills in its copies
/// and scale.
pub(super) fn input_info(input: &Input, name: &str) -> InputInfo {
    let (kind, n, d) = match input {
        Input::Points(p) => ("points", p.n, p.d),
        Input::Sparse(s) => ("sparse points", s.n, s.d),
        Input::Graph(g) => ("graph", g.rows(), 0),
        Input::Affinities(p) => ("affinities", p.rows(), 0),
    };
    InputInfo {
        name: name.to_string(),
        kind,
        n,
        d,
        duplicates: 0,
        scale_exponent: 0,
    }
}

/// Stage 1b, the values themselves ([`prep::screen_rows`], [`prep::fit_f32_range`]):
/// refuses dense points with a value that is not finite (naming its row and column) or
/// that are all one point (nothing to embed), warns through
/// `progress` when many repeat another exactly, and brings the values into the range where
/// squared distances fit f32. Sparse rows are rescaled only: their columns may be stored
/// unsorted or repeated, so equal rows need not be stored alike. Fills in `info`.
pub(super) fn screen(
    input: &mut Input,
    name: &str,
    info: &mut InputInfo,
    progress: &dyn Progress,
) -> Result<()> {
    let (values, largest) = match input {
        Input::Points(p) => {
            let (copies, largest) = prep::screen_rows(p);
            if !largest.is_finite() {
                // The first value that is not, by row and column.
                p.check_finite(name)?;
            }
            if p.n > 1 && copies == p.n - 1 {
                return Err(Error::Data(format!(
                    "{name}: all {} points are identical (zero variance): t-SNE has no \
                     distances to embed",
                    p.n
                )));
            }
            if copies as f64 >= DUPLICATES_WARNED * p.n as f64 && copies > 0 {
                progress.warn(&format!(
                    "{name}: {copies} of {} points ({:.1} %) repeat another point exactly; \
                     each set of copies collapses onto one spot (remove them first, e.g. \
                     numpy.unique(x, axis=0), for a picture of the distinct points)",
                    p.n,
                    100.0 * copies as f64 / p.n as f64
                ));
            }
            info.duplicates = copies;
            if prep::in_f32_range(largest) {
                // Nothing to scale: the values stay untouched (a caller's buffer is not
                // copied).
                return Ok(());
            }
            (p.data.to_mut(), Some(largest))
        }
        Input::Sparse(s) => (&mut s.data, None),
        Input::Graph(_) | Input::Affinities(_) => return Ok(()),
    };
    info.scale_exponent = match largest {
        Some(largest) => prep::scale_to_f32_range(values, largest),
        None => prep::fit_f32_range(values),
    };
    Ok(())
}
