//! `xla2tpu sweep`: which of the most-downloaded Hugging Face models TorchTPU can run, by op
//! coverage, and which missing ops block the rest.
//!
//! Flow: a model list ([`models`], [`hub`]) → each model resolved to profiles ([`resolve`]) →
//! judged against a backend registry ([`verdict`]) and by its runs on the emulated chip
//! ([`execution`]) → one [`row`] per model → aggregated ([`plan`], [`agreement`]) → the report
//! as data ([`document`]) → rendered ([`report`]). Each layer imports only those before it;
//! [`tally`] (counts and how they are written) is at the bottom. [`sweep`] is the whole core
//! as a library call, so tests and the benchmark can inject lists, profiles and registries.
pub mod agreement;
pub mod cli;
pub mod configs;
pub mod document;
pub mod exact;
pub mod execution;
pub mod hub;
pub mod id_family;
pub mod models;
pub mod plan;
pub mod report;
pub mod resolve;
pub mod row;
pub mod tally;
pub mod verdict;

use std::collections::BTreeMap;

use crate::ops::execution::{BF16, Executions, FLOAT32};
use crate::ops::{Profiles, Registry};
use document::{
    BackendInfo, Bf16Summary, CAVEAT, Comparison, Difference, ExactSummary, Headline, ProfileInfo, Report,
    VerdictLegend,
};
use exact::Exact;
use models::{ModelList, ModelRecord};
use resolve::{Resolution, Resolver};
pub use row::ModelRow;
use verdict::{Judge, ModelVerdict};

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
            // A run that fed the text path only is partial, as its op verdict is.
            let untraced = verdict::untraced_inputs(profiles, &resolved.resolution);
            let executed = |precision| {
                corpus
                    .executions
                    .and_then(|e| execution::judge(&resolved.resolution, e, precision))
                    .map(|v| v.partial(&untraced))
            };
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
        models: tally::tally(rows.iter().filter(|r| r.exact).map(|r| r.downloads)),
    });

    let execution = corpus.executions.map(|e| agreement::summarize(&rows, e));
    Report {
        tool: format!("xla2tpu {}", env!("CARGO_PKG_VERSION")),
        caveat: CAVEAT.to_string(),
        source: list.source.clone(),
        backend: backend_info,
        headline: Headline::new(&totals, execution.as_ref()),
        blockers: plan::blockers(&rows),
        plan: plan::greedy(&rows, &totals, opts.plan_steps),
        architectures: plan::architectures(&rows),
        reasons: plan::reasons(&rows),
        totals,
        comparison,
        bf16,
        exact,
        execution,
        verdicts: VerdictLegend::all(),
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
        model_type: m.model_type.clone().or_else(|| resolved.model_type_from_id.clone()),
        model_type_from_id: m
            .model_type_from_id
            .clone()
            .or_else(|| resolved.model_type_from_id.as_ref().and(resolved.note.clone())),
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
