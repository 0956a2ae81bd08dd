//! The values of a [`Points`](super::Points): owned, or read in place from a buffer that the
//! caller owns (a numpy array handed over by the Python package) and copied only on the
//! first write.
//!
//! A run reads its input's values many times and writes them rarely: only a metric that
//! transforms the rows (cosine, correlation) or values outside the range where squared
//! distances fit f32 change them, and PCA or a renumbering make new points instead. Reading
//! the caller's buffer in place spares a copy of the whole input (2 GB at 10M × 50) in the
//! common case, and the rare write pays that copy once.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A buffer of f32 values that someone else owns, readable from any thread while it lives.
pub type SharedValues = Arc<dyn AsRef<[f32]> + Send + Sync>;

/// Row-major values: a `Vec` of their own, or a caller's buffer until the first write
/// ([`DerefMut`] copies it then: copy on write).
#[derive(Clone)]
pub struct PointData(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Vec<f32>),
    Shared(SharedValues),
}

impl PointData {
    /// The caller's values, read in place.
    pub fn shared(values: SharedValues) -> Self {
        PointData(Repr::Shared(values))
    }

    /// Whether the values are still the caller's buffer (no write has copied them).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared(_))
    }

    /// The values as a `Vec` of their own (copied when they are still the caller's).
    pub fn into_vec(self) -> Vec<f32> {
        match self.0 {
            Repr::Owned(v) => v,
            Repr::Shared(s) => (*s).as_ref().to_vec(),
        }
    }

    /// The values as a `Vec` to change in place (length included): copied first when they
    /// are still the caller's.
    pub fn to_mut(&mut self) -> &mut Vec<f32> {
        if let Repr::Shared(s) = &self.0 {
            self.0 = Repr::Owned((**s).as_ref().to_vec());
        }
        match &mut self.0 {
            Repr::Owned(v) => v,
            Repr::Shared(_) => unreachable!("made owned above"),
        }
    }
}

impl From<Vec<f32>> for PointData {
    fn from(values: Vec<f32>) -> Self {
        PointData(Repr::Owned(values))
    }
}

impl Deref for PointData {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match &self.0 {
            Repr::Owned(v) => v,
            Repr::Shared(s) => (**s).as_ref(),
        }
    }
}

impl DerefMut for PointData {
    fn deref_mut(&mut self) -> &mut [f32] {
        self.to_mut()
    }
}

impl PartialEq for PointData {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Vec<f32>> for PointData {
    fn eq(&self, other: &Vec<f32>) -> bool {
        **self == other[..]
    }
}

impl<const N: usize> PartialEq<[f32; N]> for PointData {
    fn eq(&self, other: &[f32; N]) -> bool {
        **self == other[..]
    }
}

impl PartialEq<PointData> for Vec<f32> {
    fn eq(&self, other: &PointData) -> bool {
        self[..] == **other
    }
}

/// Serialised as a sequence of values, as a `Vec<f32>` is (a saved map reads back the same
/// either way); read back as values of their own.
impl serde::Serialize for PointData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for PointData {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<f32>::deserialize(d).map(PointData::from)
    }
}

impl fmt::Debug for PointData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whose = if self.is_shared() { "shared" } else { "owned" };
        write!(f, "PointData({whose}, {} values)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_buffer_is_read_in_place_and_copied_on_the_first_write() {
        let caller: Arc<Vec<f32>> = Arc::new(vec![1.0, 2.0, 3.0]);
        let mut data = PointData::shared(caller.clone() as SharedValues);
        assert!(data.is_shared());
        assert_eq!(data.as_ptr(), caller.as_ptr(), "read in place");
        data[1] = 5.0;
        assert!(!data.is_shared());
        assert_eq!(
            *caller,
            vec![1.0, 2.0, 3.0],
            "the caller's values untouched"
        );
        assert_eq!(data, vec![1.0, 5.0, 3.0]);
    }
}
