//! Operator profiles, backend registries and the coverage evaluator.
//!
//! Data: backend registries in `rules/backends/` and traced profiles in `corpus/ops/`, both
//! embedded in the binary. `evaluate` answers "does backend B run model type M", per op; `api`
//! answers the same for each call shape of the public PyTorch API (`check`'s TPU8xx rules).
pub mod api;
pub mod cli;
mod coverage;
mod eval;
pub mod execution;
mod neutral;
mod profile;
mod registry;
mod tools;

pub use coverage::{ClassCoverage, Completeness, Coverage, PHASES};
pub use eval::{Evaluation, MissingOp, Support, evaluate, op_support, op_support_with_inner};
pub use neutral::{NeutralMap, Resolution, cpu_requirement};
pub use profile::{IndexEntry, OpRecord, Profile, Profiles};
pub use registry::{Class, DEFAULT_BACKEND, OpEntry, Registry};
