//! What the emulator measured for `run --advise`, as data: one process's counts (the emulator's
//! `advice` event, which the run report reads) and the ranked analysis [`super::advise`] makes
//! of them.

use serde::{Deserialize, Serialize};

use super::site::Site;

/// What one emulated process counted (the emulator's `advice` event).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Advice {
    /// `optimizer` (a step ends at each step of the first optimizer) or `marker:NAME`.
    pub step_source: String,
    pub steps: Vec<StepTotals>,
    pub sites: Vec<SiteCount>,
    #[serde(default)]
    pub optimizers: Vec<OptimizerInfo>,
    #[serde(default)]
    pub compile: CompileFacts,
    #[serde(default)]
    pub ops_total: u64,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct StepTotals {
    #[serde(default)]
    pub ops: u64,
    #[serde(default)]
    pub syncs: u64,
    #[serde(default)]
    pub h2d: u64,
    #[serde(default)]
    pub h2d_bytes: u64,
    #[serde(default)]
    pub d2h: u64,
    #[serde(default)]
    pub d2h_bytes: u64,
    #[serde(default)]
    pub dynamic: u64,
    #[serde(default)]
    pub graph_breaks: u64,
    /// `torch.tpu.eager_mode` as the step ended (`DEFER_NEVER`, `DEFER_AND_FUSE`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_mode: Option<String>,
}

/// Events of one kind at one user site: in step 1 (which also holds the set-up), in the steps
/// after it ("steady"), and outside any step.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct SiteCount {
    /// `sync`, `transfer` or `dynamic`.
    pub category: String,
    /// The sync's cause (`item`, `print`, `bool`, ...), `h2d`/`d2h`, or the dynamic op.
    pub kind: String,
    #[serde(flatten)]
    pub at: Site,
    #[serde(default)]
    pub function: Option<String>,
    #[serde(default)]
    pub first: u64,
    #[serde(default)]
    pub steady: u64,
    #[serde(default)]
    pub outside: u64,
    #[serde(default)]
    pub bytes_first: u64,
    #[serde(default)]
    pub bytes_steady: u64,
    #[serde(default)]
    pub bytes_outside: u64,
    /// Steady steps in which the site fired at least once.
    #[serde(default)]
    pub steps_seen: u64,
    /// Steady copies of the very tensor the site copied the time before.
    #[serde(default)]
    pub same_steady: u64,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct OptimizerInfo {
    pub class: String,
    #[serde(default)]
    pub module: String,
    #[serde(default)]
    pub torch_optimizer: bool,
    #[serde(default)]
    pub params: u64,
    #[serde(default)]
    pub foreach: Option<bool>,
    #[serde(default)]
    pub fused: Option<bool>,
    /// `foreach`, `fused`, `for-loop` or `unknown`.
    pub implementation: String,
    #[serde(default)]
    pub steps: u64,
    /// Ops its steps dispatched, all steps together.
    #[serde(default)]
    pub ops: u64,
    #[serde(flatten)]
    pub at: Site,
    #[serde(default)]
    pub function: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct CompileFacts {
    #[serde(default)]
    pub used: bool,
    #[serde(default)]
    pub frames: u64,
    #[serde(default)]
    pub graphs: u64,
    #[serde(default)]
    pub graph_breaks: Vec<Reason>,
    #[serde(default)]
    pub recompiles: Vec<Reason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Reason {
    pub reason: String,
    pub count: u64,
    /// The compiled function (recompiles only).
    #[serde(flatten)]
    pub at: Site,
    #[serde(default)]
    pub function: Option<String>,
}

/// One thing to change, with its estimated cost per step.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// `host_sync`, `transfer`, `dynamic_shape`, `optimizer_loop`, `eager_dispatch`,
    /// `graph_break`, `recompile`.
    pub kind: &'static str,
    /// What happens, in a person's words.
    pub what: String,
    #[serde(flatten)]
    pub at: Site,
    pub function: Option<String>,
    /// Occurrences per step (steady steps).
    pub per_step: f64,
    /// Steady steps in which it happened, of `steady_steps`.
    pub steps_seen: u64,
    pub bytes_per_step: u64,
    pub cost_us_per_step: f64,
    pub why: String,
    pub help: String,
    pub example: String,
}

/// The advice for one process.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub step_source: String,
    pub steps: usize,
    /// Steps the per-step figures average over: all after the first, or the only one.
    pub steady_steps: u64,
    /// Mean per steady step.
    pub per_step: StepTotals,
    pub compiled: bool,
    pub findings: Vec<Finding>,
    pub cost_model: &'static str,
}
