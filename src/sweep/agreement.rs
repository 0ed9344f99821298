//! Where the two verdicts meet: how many models run on the emulated TorchTPU, how many pass
//! both op coverage and execution, and where the verdicts disagree, by cause. A model "runs"
//! only when both pass.
use std::collections::BTreeMap;

use serde::Serialize;

use super::row::ModelRow;
use super::tally::{Rate, Tally, tally};
use super::verdict::Verdict;
use crate::ops::execution::{ExecStatus, Executions};

#[derive(Debug, Clone, Serialize)]
pub struct ExecutionSummary {
    /// Where the execution profiles came from and the versions they were run with.
    pub source: String,
    pub versions: BTreeMap<String, String>,
    /// Execution statuses of the PyTorch checkpoints (n/a excluded), float32.
    pub totals: BTreeMap<ExecStatus, Tally>,
    /// Share of the PyTorch checkpoints that ran on the emulated TorchTPU (float32).
    pub pass_rate: Rate,
    /// Share that passes both verdicts: every op present and the run passed.
    pub both_rate: Rate,
    /// Share that passes both verdicts without resting on what the emulator could not check.
    pub both_checked_rate: Rate,
    /// Share that ran under bf16 autocast as well.
    pub bf16_pass_rate: Rate,
    /// Models where the op verdict and the execution verdict disagree, by cause.
    pub disagreements: Vec<Disagreement>,
    /// Failures on the device by kind and where they happen (the library's line, or the op).
    pub failures: Vec<FailureRow>,
    /// Passes (float32) that rest on what the emulator could not check.
    pub passes_unchecked: Tally,
    /// Those passes by what was not checked, most downloaded first.
    pub unchecked: Vec<UncheckedRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UncheckedRow {
    pub note: String,
    pub tally: Tally,
}

#[derive(Debug, Clone, Serialize)]
pub struct Disagreement {
    pub op_verdict: Verdict,
    pub execution: ExecStatus,
    /// The device failure's kind, or empty.
    pub cause: String,
    pub tally: Tally,
    /// The most-downloaded models of the group.
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailureRow {
    pub kind: String,
    /// The library's file and line, else the op, else the message.
    pub location: String,
    pub tally: Tally,
    pub profiles: Vec<String>,
    pub message: String,
}

/// What the disagreement table explains, in the report's words.
pub fn explain(op: Verdict, exec: ExecStatus, cause: &str) -> &'static str {
    match (op, exec, cause) {
        (Verdict::Pass, ExecStatus::Fail, "device_mix") => {
            "model code mixes a CPU tensor with device tensors (made inside forward without device=): invisible to a CPU trace"
        }
        (Verdict::Pass, ExecStatus::Fail, "dtype") => {
            "a dtype the run met on the device (autocast, integer or float64 tensors); the emulator runs CPU kernels, so a TPU kernel may accept what it refuses"
        }
        (Verdict::Pass, ExecStatus::Fail, "missing_op") => {
            "an op the CPU trace did not record (a device-dependent path) has no TorchTPU kernel"
        }
        (Verdict::Pass, ExecStatus::Fail, _) => "the run failed on the device where the CPU reference ran",
        (Verdict::Pass, ExecStatus::Unknown, "not_emulated") => {
            "not checked: a CPU kernel the emulator computes with refused what TorchTPU's own kernel may take (MoE routing's histc on int32, oneDNN's bf16 LSTM)"
        }
        (Verdict::Pass, ExecStatus::Unknown, _) => "not executed (CPU reference failed, timeout or memory cap)",
        (Verdict::Pass, ExecStatus::PassInference, _) => "inference ran; training did not run on the CPU reference",
        (_, ExecStatus::Pass, _) => {
            "ran on the device although the op verdict is short of pass: the device run took a path without the missing or untraced ops"
        }
        _ => "",
    }
}

pub fn summarize(rows: &[ModelRow], executions: &Executions) -> ExecutionSummary {
    let pytorch: Vec<&ModelRow> = rows.iter().filter(|r| r.result.verdict != Verdict::NotApplicable).collect();
    let whole = tally(pytorch.iter().map(|r| r.downloads));
    let status = |r: &ModelRow| r.execution.as_ref().map_or(ExecStatus::Unknown, |e| e.status);
    let mut totals: BTreeMap<ExecStatus, Tally> = BTreeMap::new();
    for s in ExecStatus::ALL {
        totals.insert(s, tally(pytorch.iter().filter(|r| status(r) == s).map(|r| r.downloads)));
    }
    let pass = totals[&ExecStatus::Pass];
    let both = tally(
        pytorch
            .iter()
            .filter(|r| r.result.verdict == Verdict::Pass && status(r) == ExecStatus::Pass)
            .map(|r| r.downloads),
    );
    let both_checked = tally(
        pytorch
            .iter()
            .filter(|r| {
                r.result.verdict == Verdict::Pass
                    && r.execution.as_ref().is_some_and(|e| e.status == ExecStatus::Pass && e.unchecked.is_empty())
            })
            .map(|r| r.downloads),
    );
    let bf16 = tally(
        pytorch
            .iter()
            .filter(|r| r.execution_bf16.as_ref().is_some_and(|e| e.status == ExecStatus::Pass))
            .map(|r| r.downloads),
    );

    // Disagreements: pass on one side only. Rows are in download order, so the first
    // examples met are the most downloaded.
    let mut groups: BTreeMap<(Verdict, ExecStatus, String), (Tally, Vec<String>)> = BTreeMap::new();
    for r in &pytorch {
        let (op, ex) = (r.result.verdict, status(r));
        if (op == Verdict::Pass) == (ex == ExecStatus::Pass) {
            continue;
        }
        let cause = r.execution.as_ref().and_then(|e| e.failure.as_ref()).map(|f| f.kind.clone()).unwrap_or_default();
        let g = groups.entry((op, ex, cause)).or_default();
        g.0.models += 1;
        g.0.downloads += r.downloads;
        if g.1.len() < 3 {
            g.1.push(r.id.clone());
        }
    }
    let mut disagreements: Vec<Disagreement> = groups
        .into_iter()
        .map(|((op_verdict, execution, cause), (tally, examples))| Disagreement {
            op_verdict,
            execution,
            cause,
            tally,
            examples,
        })
        .collect();
    disagreements.sort_by(|a, b| b.tally.models.cmp(&a.tally.models).then(b.tally.downloads.cmp(&a.tally.downloads)));

    let mut by_site: BTreeMap<(String, String), (Tally, Vec<String>, String)> = BTreeMap::new();
    for r in &pytorch {
        let Some(e) = r.execution.as_ref() else { continue };
        let Some(f) = e.failure.as_ref() else { continue };
        let location = f.site.clone().or_else(|| f.op.clone()).unwrap_or_else(|| f.message.clone());
        let g =
            by_site.entry((f.kind.clone(), location)).or_insert_with(|| (Tally::default(), vec![], f.message.clone()));
        g.0.models += 1;
        g.0.downloads += r.downloads;
        if let Some(p) = &e.profile
            && !g.1.contains(p)
        {
            g.1.push(p.clone());
        }
    }
    let mut failures: Vec<FailureRow> = by_site
        .into_iter()
        .map(|((kind, location), (tally, profiles, message))| FailureRow { kind, location, tally, profiles, message })
        .collect();
    failures.sort_by(|a, b| b.tally.downloads.cmp(&a.tally.downloads).then(a.location.cmp(&b.location)));

    let passed_unchecked: Vec<&&ModelRow> = pytorch
        .iter()
        .filter(|r| r.execution.as_ref().is_some_and(|e| e.status == ExecStatus::Pass && !e.unchecked.is_empty()))
        .collect();
    let mut by_note: BTreeMap<&str, Tally> = BTreeMap::new();
    for r in &passed_unchecked {
        for note in r.execution.iter().flat_map(|e| &e.unchecked) {
            let t = by_note.entry(note).or_default();
            t.models += 1;
            t.downloads += r.downloads;
        }
    }
    let mut unchecked: Vec<UncheckedRow> =
        by_note.into_iter().map(|(note, tally)| UncheckedRow { note: note.to_string(), tally }).collect();
    unchecked.sort_by(|a, b| b.tally.downloads.cmp(&a.tally.downloads).then(a.note.cmp(&b.note)));

    ExecutionSummary {
        passes_unchecked: tally(passed_unchecked.iter().map(|r| r.downloads)),
        unchecked,
        source: executions.source().to_string(),
        versions: executions.versions(),
        pass_rate: Rate::of(pass, whole),
        both_rate: Rate::of(both, whole),
        both_checked_rate: Rate::of(both_checked, whole),
        bf16_pass_rate: Rate::of(bf16, whole),
        totals,
        disagreements,
        failures,
    }
}
