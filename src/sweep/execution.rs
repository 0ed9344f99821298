//! The second verdict: did the model's profiled types run on the emulated TorchTPU 0.2.0
//! (`corpus/exec`)? Op coverage is necessary, not sufficient; a run on the device sees what a
//! CPU trace cannot (tensors built on the CPU inside `forward`, device-dependent dispatch,
//! dtypes under autocast). A model "runs" only when both verdicts pass, and the report says
//! where they disagree and why.
use std::collections::BTreeMap;

use serde::Serialize;

use super::ModelRow;
use super::plan::{Rate, Tally, tally};
use super::resolve::Resolution;
use super::verdict::Verdict;
use crate::ops::execution::{ExecFailure, ExecStatus, Executions};

/// A model's execution verdict in one precision: the worst of its profiles' runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecVerdict {
    pub status: ExecStatus,
    /// The profile whose run decided the status (absent when every profile passed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<ExecFailure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the emulator could not check in any of the model's runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unchecked: Vec<String>,
}

impl ExecVerdict {
    fn unknown(reason: String) -> Self {
        ExecVerdict {
            status: ExecStatus::Unknown,
            profile: None,
            failure: None,
            reason: Some(reason),
            unchecked: vec![],
        }
    }

    /// What a reader needs in one phrase: the failure's kind, op and site, or why unknown.
    pub fn detail(&self) -> String {
        match (&self.failure, &self.reason) {
            (Some(f), _) => {
                let mut s = f.kind.clone();
                if let Some(op) = &f.op {
                    s += &format!(" {op}");
                }
                if let Some(site) = &f.site {
                    s += &format!(" at {site}");
                }
                format!("{s} ({} {})", f.phase, f.step)
            }
            (None, Some(r)) => r.clone(),
            (None, None) => String::new(),
        }
    }
}

/// Judges a type-level resolution (per-config profiles have no execution profile).
pub fn judge(resolution: &Resolution, executions: &Executions, precision: &str) -> Option<ExecVerdict> {
    let ids = match resolution {
        Resolution::Profiles(ids) => ids,
        Resolution::Unknown { reason, .. } => return Some(ExecVerdict::unknown(format!("no profile: {reason}"))),
        Resolution::NotApplicable(_) => return None,
    };
    let mut worst =
        ExecVerdict { status: ExecStatus::Pass, profile: None, failure: None, reason: None, unchecked: vec![] };
    let mut unchecked = std::collections::BTreeSet::new();
    for id in ids {
        let v = match executions.get(id).and_then(|e| e.run(precision)) {
            Some(run) => {
                unchecked.extend(run.unchecked.iter().cloned());
                ExecVerdict {
                    status: run.status,
                    profile: Some(id.clone()),
                    failure: run.failure.clone(),
                    reason: run.reason.clone(),
                    unchecked: vec![],
                }
            }
            None => ExecVerdict { profile: Some(id.clone()), ..ExecVerdict::unknown(format!("{id} was not executed")) },
        };
        if v.status.severity() > worst.status.severity() {
            worst = v;
        }
    }
    if worst.status == ExecStatus::Pass {
        worst.profile = None;
    }
    worst.unchecked = unchecked.into_iter().collect();
    Some(worst)
}

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
        bf16_pass_rate: Rate::of(bf16, whole),
        totals,
        disagreements,
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executions() -> Executions {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("transformers")).unwrap();
        let write = |name: &str, f32: &str| {
            let json = format!(
                r#"{{"schema": 1, "id": "transformers/{name}", "library": "transformers", "name": "{name}",
                "precisions": {{"float32": {f32}, "bf16-autocast": {{"status": "pass"}}}}}}"#
            );
            std::fs::write(dir.path().join("transformers").join(format!("{name}.json")), json).unwrap();
        };
        write("ok", r#"{"status": "pass"}"#);
        write("moe", r#"{"status": "pass", "unchecked": ["aten::histc on int32"]}"#);
        write(
            "mix",
            r#"{"status": "fail", "failure": {"class": "M", "phase": "inference", "step": "inference",
            "kind": "device_mix", "op": "aten::add.Tensor", "site": "transformers/m.py:9", "message": "x"}}"#,
        );
        Executions::from_dir(dir.path()).unwrap()
    }

    #[test]
    fn a_model_takes_the_worst_run_of_its_profiles() {
        let ex = executions();
        let ids = |v: &[&str]| Resolution::Profiles(v.iter().map(|s| format!("transformers/{s}")).collect());
        let ok = judge(&ids(&["ok"]), &ex, "float32").unwrap();
        assert_eq!((ok.status, ok.profile), (ExecStatus::Pass, None));
        let mixed = judge(&ids(&["ok", "mix", "absent"]), &ex, "float32").unwrap();
        assert_eq!(mixed.status, ExecStatus::Fail);
        assert_eq!(mixed.profile.as_deref(), Some("transformers/mix"));
        assert_eq!(mixed.detail(), "device_mix aten::add.Tensor at transformers/m.py:9 (inference inference)");
        let moe = judge(&ids(&["ok", "moe"]), &ex, "float32").unwrap();
        assert_eq!(
            (moe.status, moe.unchecked.as_slice()),
            (ExecStatus::Pass, &["aten::histc on int32".to_string()][..])
        );
        let absent = judge(&ids(&["ok", "absent"]), &ex, "float32").unwrap();
        assert_eq!(absent.status, ExecStatus::Unknown);
        assert!(judge(&Resolution::NotApplicable("gguf".into()), &ex, "float32").is_none());
    }
}
