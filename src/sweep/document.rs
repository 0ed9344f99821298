//! The sweep's report as data: one serialisable structure every writer renders
//! ([`super::report`]), with what each number rests on.
use std::collections::BTreeMap;

use serde::Serialize;

use super::agreement::ExecutionSummary;
use super::models::SourceInfo;
use super::plan::{ArchRow, Blocker, Plan, ReasonRow, Totals};
use super::row::ModelRow;
use super::tally::Tally;
use super::verdict::Verdict;
use crate::ops::{Evaluation, Profile, Registry};

/// Said in every report: a pass here is not a promise that the model runs.
pub const CAVEAT: &str = "Op coverage is necessary, not sufficient: \"pass\" means the model's profiles \
traced inference and training of every class it loads and every ATen op they recorded has a kernel (or a \
supported decomposition) in the backend's registry. It does \
not prove that the model compiles, fits in memory, matches numerically or runs fast, and profiles come \
from small-config CPU traces of the library code, not from each repository's weights or custom code.";

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool: String,
    pub caveat: String,
    pub source: SourceInfo,
    pub backend: BackendInfo,
    pub totals: Totals,
    pub blockers: Vec<Blocker>,
    pub plan: Plan,
    pub architectures: Vec<ArchRow>,
    /// Why models are unknown or n/a.
    pub reasons: Vec<ReasonRow>,
    pub comparison: Option<Comparison>,
    /// Verdicts in bf16 under TorchTPU's autocast (a model passes in bf16 only if its bf16
    /// profiles do).
    pub bf16: Option<Bf16Summary>,
    /// `--exact`: where the per-config profiles came from and how many verdicts used them.
    pub exact: Option<ExactSummary>,
    /// The second verdict: runs on the emulated TorchTPU, and where it disagrees with op coverage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecutionSummary>,
    /// What each verdict guarantees (the legend every format prints).
    pub verdicts: Vec<VerdictLegend>,
    /// Every profile a verdict used, with its trace versions and the evaluation behind it.
    pub profiles: BTreeMap<String, ProfileInfo>,
    pub models: Vec<ModelRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BackendInfo {
    pub name: String,
    pub provenance: String,
}

impl BackendInfo {
    pub fn of(r: &Registry) -> Self {
        BackendInfo { name: r.name().to_string(), provenance: r.provenance().to_string() }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileInfo {
    pub status: String,
    pub method: String,
    pub versions: BTreeMap<String, String>,
    /// The evaluation, with the profile's per-class, per-phase coverage under `coverage`.
    pub evaluation: Evaluation,
    /// The evaluation on the `--compare` backend.
    pub compare: Option<Evaluation>,
}

impl ProfileInfo {
    pub fn of(p: &Profile, evaluation: Evaluation, compare: Option<Evaluation>) -> Self {
        ProfileInfo {
            status: p.status.clone(),
            method: p.method.clone(),
            versions: p.versions.clone(),
            evaluation,
            compare,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Bf16Summary {
    pub totals: Totals,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExactSummary {
    /// The `ops trace --configs/--hub` output directory.
    pub source: String,
    /// Models whose verdict came from a per-config profile.
    pub models: Tally,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerdictLegend {
    pub verdict: Verdict,
    pub guarantees: &'static str,
}

impl VerdictLegend {
    pub fn all() -> Vec<VerdictLegend> {
        Verdict::ALL.into_iter().map(|verdict| VerdictLegend { verdict, guarantees: verdict.guarantee() }).collect()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub backend: BackendInfo,
    pub totals: Totals,
    pub differences: Vec<Difference>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub id: String,
    pub downloads: u64,
    pub verdict: Verdict,
    pub compare_verdict: Verdict,
    pub missing_only_here: Vec<String>,
    pub missing_only_there: Vec<String>,
}
