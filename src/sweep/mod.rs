//! `xla2tpu sweep`: which of the most-downloaded Hugging Face models TorchTPU can run, by op
//! coverage, and which missing ops block the rest.
//!
//! Flow: a model list ([`models`], [`hub`]) → each model resolved to profiles ([`resolve`]) →
//! judged against a backend registry ([`verdict`]) → aggregated ([`plan`]) → rendered
//! ([`report`]). [`sweep`] is the whole core as a library call, so tests and the benchmark
//! can inject lists, profiles and registries.
pub mod cli;
pub mod configs;
pub mod exact;
pub mod execution;
pub mod hub;
pub mod models;
pub mod plan;
pub mod report;
pub mod resolve;
pub mod verdict;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ops::execution::{BF16, Executions, FLOAT32};
use crate::ops::{Profiles, Registry};
use exact::Exact;
use execution::ExecVerdict;
use models::{ModelList, ModelRecord};
use report::{BackendInfo, Bf16Summary, Comparison, Difference, ExactSummary, ProfileInfo, Report};
use resolve::{Resolution, Resolver};
use verdict::{Judge, ModelVerdict};

/// Said in every report: a pass here is not a promise that the model runs.
pub const CAVEAT: &str = "Op coverage is necessary, not sufficient: \"pass\" means the model's profiles \
traced inference and training of every class it loads and every ATen op they recorded has a kernel (or a \
supported decomposition) in the backend's registry. It does \
not prove that the model compiles, fits in memory, matches numerically or runs fast, and profiles come \
from small-config CPU traces of the library code, not from each repository's weights or custom code.";

#[derive(Debug, Clone)]
pub struct Options {
    /// Steps of the greedy fix plan.
    pub plan_steps: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { plan_steps: 10 }
    }
}

/// The profiles a sweep judges with: the float32 type profiles, optionally the bf16-autocast
/// ones (same ids), per-config profiles from `ops trace --configs/--hub` (`--exact`) and the
/// execution profiles (runs on the emulated TorchTPU, same ids).
#[derive(Clone, Copy)]
pub struct Corpus<'a> {
    pub f32: &'a Profiles,
    pub bf16: Option<&'a Profiles>,
    pub exact: Option<&'a Exact>,
    pub executions: Option<&'a Executions>,
}

impl<'a> From<&'a Profiles> for Corpus<'a> {
    fn from(f32: &'a Profiles) -> Self {
        Corpus { f32, bf16: None, exact: None, executions: None }
    }
}

/// One model's result.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    /// 1-based position in the (download-sorted) list.
    pub rank: usize,
    pub id: String,
    pub downloads: u64,
    pub model_type: Option<String>,
    pub library: Option<String>,
    pub pipeline_tag: Option<String>,
    pub arch: String,
    /// Profiles that stand for the model (empty when unknown or n/a).
    pub profiles: Vec<String>,
    /// How the resolution was reached when not directly (PEFT base, diffusers components).
    pub note: Option<String>,
    #[serde(flatten)]
    pub result: ModelVerdict,
    /// The same model on the `--compare` backend.
    pub compare: Option<ModelVerdict>,
    /// The same model in bf16 under TorchTPU's autocast (its bf16-autocast profiles).
    pub bf16: Option<ModelVerdict>,
    /// The verdict comes from the model's own config (per-config profile, `--exact`), not its type.
    pub exact: bool,
    /// Its profiled types' runs on the emulated TorchTPU, float32 (absent for n/a models or
    /// without execution profiles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecVerdict>,
    /// The same runs under bf16 autocast.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_bf16: Option<ExecVerdict>,
}

/// Runs the sweep over `list` (already cut to the top N) against `backend`, and optionally
/// `compare`.
pub fn sweep<'a>(
    list: &ModelList,
    corpus: impl Into<Corpus<'a>>,
    backend: &Registry,
    compare: Option<&Registry>,
    opts: &Options,
) -> Report {
    let corpus = corpus.into();
    let profiles = corpus.f32;
    let resolver = Resolver::new(profiles, &list.models);
    let exact_profiles = corpus.exact.map(Exact::profiles);
    let mut judge = Judge::new(backend, profiles).with_exact(exact_profiles);
    let mut other = compare.map(|r| Judge::new(r, profiles).with_exact(exact_profiles));
    let mut bf16 = corpus.bf16.map(|p| Judge::bf16(backend, p));
    let rows: Vec<ModelRow> = list
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let resolved = resolver.resolve(m);
            // bf16 and executions have type profiles only: they are judged on the type-level resolution.
            let bf16 = bf16.as_mut().map(|j| j.judge(&resolved.resolution));
            let executed =
                |precision| corpus.executions.and_then(|e| execution::judge(&resolved.resolution, e, precision));
            let (execution, execution_bf16) = (executed(FLOAT32), executed(BF16));
            let (resolved, exact) = match corpus.exact.and_then(|e| e.resolve(m, &resolved)) {
                Some(r) => (r, true),
                None => (resolved, false),
            };
            let result = judge.judge(&resolved.resolution);
            let compare = other.as_mut().map(|j| j.judge(&resolved.resolution));
            ModelRow { bf16, exact, execution, execution_bf16, ..row(i + 1, m, resolved, result, compare) }
        })
        .collect();

    let totals = plan::totals(rows.iter().map(|r| (&r.result, r.downloads)));
    let comparison = other.map(|j| {
        let backend = BackendInfo::of(j.registry());
        let totals = plan::totals(rows.iter().filter_map(|r| Some((r.compare.as_ref()?, r.downloads))));
        let differences = rows.iter().filter_map(difference).collect();
        (Comparison { backend, totals, differences }, j.into_evaluations())
    });
    let (comparison, compare_evals) = match comparison {
        Some((c, e)) => (Some(c), e),
        None => (None, BTreeMap::new()),
    };
    let backend_info = BackendInfo::of(judge.registry());
    let evaluations = judge.into_evaluations();
    let profiles_used = evaluations
        .into_iter()
        .filter_map(|(id, evaluation)| {
            let p = profiles.get(&id).or_else(|| exact_profiles?.get(&id))?;
            Some((id.clone(), ProfileInfo::of(p, evaluation, compare_evals.get(&id).cloned())))
        })
        .collect();
    let bf16 = bf16.map(|_| Bf16Summary {
        totals: plan::totals(rows.iter().filter_map(|r| Some((r.bf16.as_ref()?, r.downloads)))),
    });
    let exact = corpus.exact.map(|e| ExactSummary {
        source: e.source().to_string(),
        models: plan::tally(rows.iter().filter(|r| r.exact).map(|r| r.downloads)),
    });

    let execution = corpus.executions.map(|e| execution::summarize(&rows, e));
    Report {
        tool: format!("xla2tpu {}", env!("CARGO_PKG_VERSION")),
        caveat: CAVEAT.to_string(),
        source: list.source.clone(),
        backend: backend_info,
        blockers: plan::blockers(&rows),
        plan: plan::greedy(&rows, &totals, opts.plan_steps),
        architectures: plan::architectures(&rows),
        reasons: plan::reasons(&rows),
        totals,
        comparison,
        bf16,
        exact,
        execution,
        verdicts: report::VerdictLegend::all(),
        profiles: profiles_used,
        models: rows,
    }
}

fn row(
    rank: usize,
    m: &ModelRecord,
    resolved: resolve::Resolved,
    result: ModelVerdict,
    compare: Option<ModelVerdict>,
) -> ModelRow {
    ModelRow {
        rank,
        id: m.id.clone(),
        downloads: m.downloads,
        model_type: m.model_type.clone(),
        library: m.library_name.clone(),
        pipeline_tag: m.pipeline_tag.clone(),
        arch: resolved.arch,
        profiles: match resolved.resolution {
            Resolution::Profiles(ids) => ids,
            _ => Vec::new(),
        },
        note: resolved.note,
        result,
        compare,
        bf16: None,
        exact: false,
        execution: None,
        execution_bf16: None,
    }
}

/// A model whose verdict or missing ops differ between the two backends.
fn difference(r: &ModelRow) -> Option<Difference> {
    let other = r.compare.as_ref()?;
    if other.verdict == r.result.verdict && other.missing == r.result.missing {
        return None;
    }
    let only = |a: &[String], b: &[String]| a.iter().filter(|op| !b.contains(op)).cloned().collect();
    Some(Difference {
        id: r.id.clone(),
        downloads: r.downloads,
        verdict: r.result.verdict,
        compare_verdict: other.verdict,
        missing_only_here: only(&r.result.missing, &other.missing),
        missing_only_there: only(&other.missing, &r.result.missing),
    })
}
