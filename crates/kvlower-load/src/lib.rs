//! Loading kvlower's inputs from disk.

pub mod yaml;
