//! Aggregates over per-model rows: totals, per-architecture rows, the blockers ranking and the
//! greedy "implement these ops first" plan. Every number is a sum over [`ModelRow`]s, so it can
//! be traced back to models, their profiles and the registry.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::row::ModelRow;
use super::tally::{Rate, Tally};
use super::verdict::{ModelVerdict, Verdict};
use crate::ops::Completeness;

#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    pub pass: Tally,
    /// No missing op, inference traced for every class, training not fully traced.
    pub pass_inference: Tally,
    /// No missing op, but an input the model takes (image, video, audio) was never fed.
    pub partial: Tally,
    /// No missing op among the recorded ones, but a class's inference was not traced.
    pub incomplete: Tally,
    pub fail: Tally,
    pub unknown: Tally,
    pub not_applicable: Tally,
    pub total: Tally,
    /// Failing models whose missing ops are all training-only.
    pub fail_inference_ok: Tally,
    /// Pass share of the PyTorch checkpoints (total minus n/a). Only `pass` counts.
    pub pass_rate: Rate,
    /// Share whose inference is proven: pass, pass-inference, and failures whose missing ops
    /// are training-only (with inference traced for every class).
    pub inference_rate: Rate,
}

impl Totals {
    pub fn get(&self, v: Verdict) -> Tally {
        match v {
            Verdict::Pass => self.pass,
            Verdict::PassInference => self.pass_inference,
            Verdict::Partial => self.partial,
            Verdict::Incomplete => self.incomplete,
            Verdict::Fail => self.fail,
            Verdict::Unknown => self.unknown,
            Verdict::NotApplicable => self.not_applicable,
        }
    }

    /// The denominator of pass rates: models for which op coverage is a meaningful question.
    pub fn pytorch(&self) -> Tally {
        Tally {
            models: self.total.models - self.not_applicable.models,
            downloads: self.total.downloads - self.not_applicable.downloads,
        }
    }
}

pub fn totals<'a>(verdicts: impl Iterator<Item = (&'a ModelVerdict, u64)>) -> Totals {
    let mut by: HashMap<Verdict, Tally> = HashMap::new();
    let (mut total, mut fail_inference_ok) = (Tally::default(), Tally::default());
    for (v, downloads) in verdicts {
        by.entry(v.verdict).or_default().add(downloads);
        total.add(downloads);
        if v.verdict == Verdict::Fail && v.inference_ok {
            fail_inference_ok.add(downloads);
        }
    }
    let get = |v| by.get(&v).copied().unwrap_or_default();
    let mut t = Totals {
        pass: get(Verdict::Pass),
        pass_inference: get(Verdict::PassInference),
        partial: get(Verdict::Partial),
        incomplete: get(Verdict::Incomplete),
        fail: get(Verdict::Fail),
        unknown: get(Verdict::Unknown),
        not_applicable: get(Verdict::NotApplicable),
        total,
        fail_inference_ok,
        pass_rate: Rate::default(),
        inference_rate: Rate::default(),
    };
    t.pass_rate = Rate::of(t.pass, t.pytorch());
    let inference = Tally {
        models: t.pass.models + t.pass_inference.models + t.fail_inference_ok.models,
        downloads: t.pass.downloads + t.pass_inference.downloads + t.fail_inference_ok.downloads,
    };
    t.inference_rate = Rate::of(inference, t.pytorch());
    t
}

#[derive(Debug, Clone, Serialize)]
pub struct ArchRow {
    /// Grouping key: `transformers/llama`, `diffusers:FluxPipeline`, `timm/resnet`, ...
    pub arch: String,
    pub total: Tally,
    pub pass: usize,
    pub pass_inference: usize,
    pub partial: usize,
    pub incomplete: usize,
    pub fail: usize,
    pub unknown: usize,
    pub not_applicable: usize,
    /// Union of the missing ops of its failing models.
    pub missing: Vec<String>,
    /// The most frequent reason among its unknown/n/a models.
    pub reason: Option<String>,
}

pub fn architectures(rows: &[ModelRow]) -> Vec<ArchRow> {
    struct Acc<'a> {
        row: ArchRow,
        missing: BTreeSet<&'a str>,
        reasons: HashMap<&'a str, usize>,
    }
    let mut groups: BTreeMap<&str, Acc> = BTreeMap::new();
    for r in rows {
        let acc = groups.entry(&r.arch).or_insert_with(|| Acc {
            row: ArchRow {
                arch: r.arch.clone(),
                total: Tally::default(),
                pass: 0,
                pass_inference: 0,
                partial: 0,
                incomplete: 0,
                fail: 0,
                unknown: 0,
                not_applicable: 0,
                missing: Vec::new(),
                reason: None,
            },
            missing: BTreeSet::new(),
            reasons: HashMap::new(),
        });
        acc.row.total.add(r.downloads);
        match r.result.verdict {
            Verdict::Pass => acc.row.pass += 1,
            Verdict::PassInference => acc.row.pass_inference += 1,
            Verdict::Partial => acc.row.partial += 1,
            Verdict::Incomplete => acc.row.incomplete += 1,
            Verdict::Fail => acc.row.fail += 1,
            Verdict::Unknown => acc.row.unknown += 1,
            Verdict::NotApplicable => acc.row.not_applicable += 1,
        }
        acc.missing.extend(r.result.missing.iter().map(String::as_str));
        if let Some(reason) = &r.result.reason {
            *acc.reasons.entry(reason).or_default() += 1;
        }
    }
    let mut out: Vec<ArchRow> = groups
        .into_values()
        .map(|mut acc| {
            acc.row.missing = acc.missing.into_iter().map(str::to_owned).collect();
            acc.row.reason =
                acc.reasons.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0))).map(|(r, _)| r.to_owned());
            acc.row
        })
        .collect();
    out.sort_by(|a, b| b.total.downloads.cmp(&a.total.downloads).then(b.total.models.cmp(&a.total.models)));
    out
}

#[derive(Debug, Clone, Serialize)]
pub struct Blocker {
    pub op: String,
    /// Failing models that miss this op.
    pub blocks: Tally,
    /// Of those, the ones for which it is the only missing op (implementing it flips them).
    pub alone: Tally,
    /// The most-downloaded models it blocks (up to 3).
    pub examples: Vec<String>,
}

/// Missing ops ranked by the downloads they block. Rows must be in download order for the
/// examples to be the most-downloaded ones.
pub fn blockers(rows: &[ModelRow]) -> Vec<Blocker> {
    let mut by_op: BTreeMap<&str, Blocker> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.result.verdict == Verdict::Fail) {
        for op in &r.result.missing {
            let b = by_op.entry(op).or_insert_with(|| Blocker {
                op: op.clone(),
                blocks: Tally::default(),
                alone: Tally::default(),
                examples: Vec::new(),
            });
            b.blocks.add(r.downloads);
            if r.result.missing.len() == 1 {
                b.alone.add(r.downloads);
            }
            if b.examples.len() < 3 {
                b.examples.push(r.id.clone());
            }
        }
    }
    let mut out: Vec<Blocker> = by_op.into_values().collect();
    out.sort_by(|a, b| {
        (b.blocks.downloads, b.blocks.models).cmp(&(a.blocks.downloads, a.blocks.models)).then(a.op.cmp(&b.op))
    });
    out
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanStep {
    /// Number of ops implemented so far, this one included.
    pub k: usize,
    pub op: String,
    /// Models that pass once this op is implemented (on top of the earlier steps).
    pub flipped: Tally,
    /// Pass rate after this step.
    pub rate: Rate,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub baseline: Rate,
    pub steps: Vec<PlanStep>,
}

/// Greedy fix order: each step implements the op that flips the most downloads from fail to
/// pass (a model flips when all its missing ops are implemented and its profiles are complete;
/// one whose training was not traced becomes pass-inference at best, so it never counts). When no single op flips
/// anything, the op blocking the most downloads goes first, so the plan keeps moving towards
/// models that need several ops. Ties break on model counts, then the op name.
pub fn greedy(rows: &[ModelRow], totals: &Totals, max_steps: usize) -> Plan {
    let mut open: Vec<(BTreeSet<&str>, u64)> = rows
        .iter()
        .filter(|r| r.result.verdict == Verdict::Fail && r.result.coverage == Some(Completeness::Complete))
        .map(|r| (r.result.missing.iter().map(String::as_str).collect(), r.downloads))
        .collect();
    let denominator = totals.pytorch();
    let mut passing = totals.pass;
    let mut steps = Vec::new();
    while steps.len() < max_steps && !open.is_empty() {
        // op -> (flipped, blocked)
        let mut score: HashMap<&str, (Tally, Tally)> = HashMap::new();
        for (missing, downloads) in &open {
            for op in missing {
                let s = score.entry(op).or_default();
                s.1.add(*downloads);
                if missing.len() == 1 {
                    s.0.add(*downloads);
                }
            }
        }
        let Some((op, _)) = score.into_iter().max_by(|(a_op, (af, ab)), (b_op, (bf, bb))| {
            (af.downloads, af.models, ab.downloads, ab.models)
                .cmp(&(bf.downloads, bf.models, bb.downloads, bb.models))
                .then(b_op.cmp(a_op))
        }) else {
            break;
        };
        let mut flipped = Tally::default();
        open.retain_mut(|(missing, downloads)| {
            missing.remove(op);
            let done = missing.is_empty();
            if done {
                flipped.add(*downloads);
            }
            !done
        });
        passing.models += flipped.models;
        passing.downloads += flipped.downloads;
        steps.push(PlanStep { k: steps.len() + 1, op: op.to_string(), flipped, rate: Rate::of(passing, denominator) });
    }
    Plan { baseline: totals.pass_rate, steps }
}

#[derive(Debug, Clone, Serialize)]
pub struct ReasonRow {
    pub verdict: Verdict,
    pub reason: String,
    pub tally: Tally,
}

/// Why models are unknown or n/a, grouped by reason, most downloads first.
pub fn reasons(rows: &[ModelRow]) -> Vec<ReasonRow> {
    let mut by: HashMap<(Verdict, &str), Tally> = HashMap::new();
    for r in rows {
        if let Some(reason) = &r.result.reason {
            by.entry((r.result.verdict, reason)).or_default().add(r.downloads);
        }
    }
    let mut out: Vec<ReasonRow> = by
        .into_iter()
        .map(|((verdict, reason), tally)| ReasonRow { verdict, reason: reason.to_string(), tally })
        .collect();
    out.sort_by(|a, b| {
        (b.tally.downloads, b.tally.models).cmp(&(a.tally.downloads, a.tally.models)).then(a.reason.cmp(&b.reason))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, downloads: u64, missing: &[&str]) -> ModelRow {
        ModelRow {
            rank: 0,
            id: id.into(),
            downloads,
            model_type: None,
            model_type_from_id: None,
            library: None,
            pipeline_tag: None,
            arch: "a".into(),
            profiles: vec!["p".into()],
            note: None,
            result: ModelVerdict {
                verdict: if missing.is_empty() { Verdict::Pass } else { Verdict::Fail },
                missing: missing.iter().map(|s| s.to_string()).collect(),
                reason: None,
                inference_ok: false,
                coverage: Some(Completeness::Complete),
                confidence: Vec::new(),
                untraced_inputs: Vec::new(),
            },
            compare: None,
            bf16: None,
            exact: false,
            execution: None,
            execution_bf16: None,
        }
    }

    #[test]
    fn greedy_moves_on_when_no_single_op_flips_anything() {
        let rows =
            [row("pass", 10, &[]), row("two", 50, &["a", "b"]), row("b-only", 5, &["b"]), row("c", 1, &["c", "d"])];
        let t = totals(rows.iter().map(|r| (&r.result, r.downloads)));
        let plan = greedy(&rows, &t, 10);
        let ops: Vec<&str> = plan.steps.iter().map(|s| s.op.as_str()).collect();
        // b flips 5 at once; then a flips 50; then c/d: nothing flips alone, so the most
        // blocking (tie → name order) goes first and the other completes the model.
        assert_eq!(ops, ["b", "a", "c", "d"]);
        assert_eq!(plan.steps[2].flipped.models, 0);
        assert_eq!(plan.steps[3].rate.by_count, 100.0);
        assert_eq!(plan.baseline.by_count, 25.0);
    }
}
