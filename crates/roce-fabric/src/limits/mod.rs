//! What a simulation may ask for: the ceilings on what scenarios and input files count
//! ([`bounds`]) and reading input files within them ([`input`]).

pub mod bounds;
pub mod input;
