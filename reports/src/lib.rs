//! `lockbench-reports`: what a lockbench run writes ([`model`], the versioned results file and its JSON
//! schema) and, later, the charts and reports built from it.
//!
//! Reports know only the results model: a results file written by any version with the same
//! [`model::SCHEMA_VERSION`] can be read back with [`model::Results::from_json`].

pub mod model;
pub mod scale;

pub use model::{Results, SCHEMA, SCHEMA_VERSION};
