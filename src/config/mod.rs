//! Configuration: text to a validated [`model::Config`]. Pure and fuzzable:
//! nothing here binds, spawns or touches the data plane.

pub mod model;
