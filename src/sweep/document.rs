//! The sweep's report as data: one serialisable structure every writer renders
//! ([`super::report`]), with what each number rests on.
use std::collections::BTreeMap;

use serde::Serialize;

use super::agreement::ExecutionSummary;
use super::models::SourceInfo;
use super::plan::{ArchRow, Blocker, Plan, ReasonRow, Totals};
use super::row::ModelRow;
use super::tally::{Rate, Tally};
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
    /// The answer every format leads with.
    pub headline: Headline,
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

/// The answer in a few figures, all shares of one denominator: the PyTorch checkpoints of the
/// list (models with no PyTorch weights, `n/a`, are left out of every figure).
#[derive(Debug, Clone, Serialize)]
pub struct Headline {
    /// The denominator.
    pub pytorch: Tally,
    /// Left out of it.
    pub not_applicable: Tally,
    /// Every op the model's profiles recorded has a kernel (verdict `pass`).
    pub op_coverage: Rate,
    /// Its profiled types ran inference and a training step on the emulated chip (float32).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Rate>,
    /// Both of the above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub both: Option<Rate>,
    /// Both, without resting on anything the emulator could not check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub both_checked: Option<Rate>,
}

impl Headline {
    pub fn new(totals: &Totals, execution: Option<&ExecutionSummary>) -> Headline {
        Headline {
            pytorch: totals.pytorch(),
            not_applicable: totals.not_applicable,
            op_coverage: totals.pass_rate,
            runs: execution.map(|x| x.pass_rate),
            both: execution.map(|x| x.both_rate),
            both_checked: execution.map(|x| x.both_checked_rate),
        }
    }

    /// The figures with their labels, in the order every format shows them. The last is left
    /// out when nothing rests on an unchecked fact (it would repeat `both`).
    pub fn figures(&self) -> Vec<(&'static str, Rate)> {
        let mut out = vec![("op coverage passes", self.op_coverage)];
        out.extend(self.runs.map(|r| ("runs on the emulated chip", r)));
        out.extend(self.both.map(|r| ("both", r)));
        if let (Some(both), Some(checked)) = (self.both, self.both_checked)
            && checked != both
        {
            out.push(("both, resting on nothing unchecked", checked));
        }
        out
    }
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
