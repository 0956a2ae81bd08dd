//! The embedded default data set: 1,797 handwritten digits, 8×8 pixels (64 features,
//! values 0–16), with labels 0–9. UCI "Optical Recognition of Handwritten Digits"
//! (Alpaydin & Kaynak 1998) as bundled with scikit-learn; CC BY 4.0.

use crate::io::{self, Labels};
use crate::Points;
use crate::Result;

const POINTS: &[u8] = include_bytes!("digits1797_64_u8.npy");
const LABELS: &[u8] = include_bytes!("digits1797_labels_u8.npy");

/// Name shown in reports and plot titles.
pub const NAME: &str = "digits (built in)";

/// The digits as points.
pub fn points() -> Result<Points> {
    Ok(io::read_points_npy_bytes(POINTS, "embedded digits")?)
}

/// The digit of each point.
pub fn labels() -> Result<Labels> {
    Ok(io::read_labels_npy_bytes(LABELS, "embedded digit labels")?)
}
