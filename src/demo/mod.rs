//! demo data.
