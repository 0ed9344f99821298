//! Operator profiles, backend registries and the coverage evaluator (owned by the ops work).
pub mod cli;
