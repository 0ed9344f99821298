//! `xla2tpu sweep`: which of the most-downloaded Hugging Face models TorchTPU can run, by op
//! coverage, and which missing ops block the rest.
//!
//! Flow: a model list ([`models`], [`hub`]) → each model resolved to profiles ([`resolve`]) →
//! judged against a backend registry ([`verdict`]) → aggregated ([`plan`]) → rendered
//! ([`report`]). [`sweep`] is the whole core as a library call, so tests and the benchmark
//! can inject lists, profiles and registries.
pub mod cli;
pub mod configs;
pub mod hub;
pub mod models;
pub mod plan;
pub mod report;
pub mod resolve;
pub mod verdict;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ops::{Profiles, Registry};
use models::{ModelList, ModelRecord};
use report::{BackendInfo, Comparison, Difference, ProfileInfo, Report};
use resolve::{Resolution, Resolver};
use verdict::{Judge, ModelVerdict};

/// Said in every report: a pass here is not a promise that the model runs.
pub const CAVEAT: &str = "Op coverage is necessary, not sufficient: \"pass\" means every ATen op in the \
model's traced profile has a kernel (or a supported decomposition) in the backend's registry. It does \
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
}

/// Runs the sweep over `list` (already cut to the top N) against `backend`, and optionally
/// `compare`.
pub fn sweep(
    list: &ModelList,
    profiles: &Profiles,
    backend: &Registry,
    compare: Option<&Registry>,
    opts: &Options,
) -> Report {
    let resolver = Resolver::new(profiles, &list.models);
    let mut judge = Judge::new(backend, profiles);
    let mut other = compare.map(|r| Judge::new(r, profiles));
    let rows: Vec<ModelRow> = list
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let resolved = resolver.resolve(m);
            let result = judge.judge(&resolved.resolution);
            let compare = other.as_mut().map(|j| j.judge(&resolved.resolution));
            row(i + 1, m, resolved, result, compare)
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
            let p = profiles.get(&id)?;
            Some((
                id.clone(),
                ProfileInfo {
                    status: p.status.clone(),
                    method: p.method.clone(),
                    versions: p.versions.clone(),
                    compare: compare_evals.get(&id).cloned(),
                    evaluation,
                },
            ))
        })
        .collect();

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
