//! The crate's integration tests, in one binary.

mod input_bounds;
