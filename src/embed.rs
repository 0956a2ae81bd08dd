//! embed.
