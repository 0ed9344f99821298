//! The second verdict: did the model's profiled types run on the emulated TorchTPU 0.2.0
//! (`corpus/exec`)? Op coverage is necessary, not sufficient; a run on the device sees what a
//! CPU trace cannot (tensors built on the CPU inside `forward`, device-dependent dispatch,
//! dtypes under autocast). This is one model's verdict; [`super::agreement`] sums them and
//! says where the two verdicts disagree and why.
use serde::Serialize;

use super::resolve::Resolution;
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

    /// A pass (or pass-inference) of a model whose profiles never fed `untraced` (image, video,
    /// audio) is `partial`: the device ran the text path only, as the CPU reference did.
    pub fn partial(self, untraced: &[String]) -> Self {
        if untraced.is_empty() || !matches!(self.status, ExecStatus::Pass | ExecStatus::PassInference) {
            return self;
        }
        ExecVerdict { status: ExecStatus::Partial, reason: Some(super::verdict::untraced_cause(untraced)), ..self }
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
