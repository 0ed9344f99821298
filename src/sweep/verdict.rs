//! Per-model verdicts. Thousands of models share a few hundred profiles, so each profile is
//! evaluated once per backend and the result reused.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::resolve::Resolution;
use crate::ops::{Completeness, Evaluation, Profiles, Registry, evaluate};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    #[serde(rename = "pass")]
    Pass,
    #[serde(rename = "pass-inference")]
    PassInference,
    #[serde(rename = "partial")]
    Partial,
    #[serde(rename = "incomplete")]
    Incomplete,
    #[serde(rename = "fail")]
    Fail,
    #[serde(rename = "unknown")]
    Unknown,
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl Verdict {
    pub const ALL: [Verdict; 7] = [
        Verdict::Pass,
        Verdict::PassInference,
        Verdict::Partial,
        Verdict::Incomplete,
        Verdict::Fail,
        Verdict::Unknown,
        Verdict::NotApplicable,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::PassInference => "pass-inference",
            Verdict::Partial => "partial",
            Verdict::Incomplete => "incomplete",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
            Verdict::NotApplicable => "n/a",
        }
    }

    /// What the verdict guarantees, in the words every report's legend and the README use.
    pub fn guarantee(self) -> &'static str {
        match self {
            Verdict::Pass => {
                "every class the model loads was traced in inference, training forward and backward, and the backend \
                 has every op recorded"
            }
            Verdict::PassInference => {
                "every class was traced in inference and the backend has every op recorded, but training (forward or \
                 backward) was not traced for some class: fine-tuning is not proven"
            }
            Verdict::Partial => {
                "no recorded op is missing, but the profile traced the text path only: an input the model takes (image, \
                 video, audio) was never fed, so its encoder's ops are absent from the profile (cause given)"
            }
            Verdict::Incomplete => {
                "no recorded op is missing, but inference was not traced for some class, so ops may be absent from \
                 the profile: nothing is proven"
            }
            Verdict::Fail => {
                "the backend lacks at least one recorded op (listed); inference_ok says if inference needs it"
            }
            Verdict::Unknown => "no profile stands for the model (reason given)",
            Verdict::NotApplicable => "not a PyTorch checkpoint (GGUF, ONNX, other frameworks)",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelVerdict {
    pub verdict: Verdict,
    /// Missing ops, union over the model's profiles, sorted.
    pub missing: Vec<String>,
    /// Why the verdict is unknown or n/a, or what a partial one did not trace.
    pub reason: Option<String>,
    /// No missing op is used at inference (training-only gaps), and every class ran inference.
    pub inference_ok: bool,
    /// The weakest coverage among the model's profiles (absent when unknown or n/a).
    pub coverage: Option<Completeness>,
    /// What stands behind the verdict, per profile: classes and phases traced, config, tensors,
    /// precision, tracer and library versions.
    pub confidence: Vec<String>,
    /// Inputs the model takes that its profiles never fed (`image`, `video`, `audio`, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untraced_inputs: Vec<String>,
}

impl ModelVerdict {
    fn without_ops(verdict: Verdict, reason: String) -> Self {
        ModelVerdict {
            verdict,
            missing: Vec::new(),
            reason: Some(reason),
            inference_ok: false,
            coverage: None,
            confidence: Vec::new(),
            untraced_inputs: Vec::new(),
        }
    }
}

/// The cause of a `partial` verdict: `image path not traced`, `image and video paths not traced`.
pub fn untraced_cause(inputs: &[String]) -> String {
    match inputs {
        [] => String::new(),
        [one] => format!("{one} path not traced"),
        [init @ .., last] => format!("{} and {last} paths not traced", init.join(", ")),
    }
}

/// The inputs a type-level resolution's profiles never fed, sorted and deduplicated.
pub fn untraced_inputs(profiles: &Profiles, resolution: &Resolution) -> Vec<String> {
    let Resolution::Profiles(ids) = resolution else { return Vec::new() };
    let set: BTreeSet<&String> =
        ids.iter().filter_map(|id| profiles.get(id)).flat_map(|p| &p.untraced_inputs).collect();
    set.into_iter().cloned().collect()
}

/// Judges resolutions against one backend, memoising evaluations by profile id.
pub struct Judge<'a> {
    registry: &'a Registry,
    profiles: &'a Profiles,
    /// Per-config profiles (`--exact`), looked up after `profiles`.
    exact: Option<&'a Profiles>,
    memo: HashMap<String, Evaluation>,
    /// Named in the reason when a profile is missing (`float32`, `bf16-autocast`).
    precision: &'static str,
}

impl<'a> Judge<'a> {
    pub fn new(registry: &'a Registry, profiles: &'a Profiles) -> Self {
        Judge { registry, profiles, exact: None, memo: HashMap::new(), precision: "float32" }
    }

    /// A judge of the bf16-autocast profiles (same ids, traced under TorchTPU's autocast).
    pub fn bf16(registry: &'a Registry, profiles: &'a Profiles) -> Self {
        Judge { precision: "bf16-autocast", ..Judge::new(registry, profiles) }
    }

    pub fn with_exact(self, exact: Option<&'a Profiles>) -> Self {
        Judge { exact, ..self }
    }

    pub fn registry(&self) -> &Registry {
        self.registry
    }

    pub fn judge(&mut self, resolution: &Resolution) -> ModelVerdict {
        let ids = match resolution {
            Resolution::Profiles(ids) => ids,
            Resolution::Unknown { reason, .. } => return ModelVerdict::without_ops(Verdict::Unknown, reason.clone()),
            Resolution::NotApplicable(why) => return ModelVerdict::without_ops(Verdict::NotApplicable, why.clone()),
        };
        let mut missing = BTreeSet::new();
        let mut inference_ok = true;
        let mut coverage = Completeness::Complete;
        let mut confidence = Vec::new();
        let mut untraced = BTreeSet::new();
        for id in ids {
            if let Some(p) = self.profiles.get(id).or_else(|| self.exact?.get(id)) {
                untraced.extend(p.untraced_inputs.iter().cloned());
            }
            let Some(eval) = self.evaluation(id) else {
                return ModelVerdict::without_ops(Verdict::Unknown, format!("no {} profile {id}", self.precision));
            };
            missing.extend(eval.missing.iter().map(|m| m.op.clone()));
            inference_ok &= eval.inference_ok;
            coverage = coverage.min(eval.coverage.completeness);
            confidence.push(format!("{id}: {}", eval.coverage.note));
        }
        let untraced: Vec<String> = untraced.into_iter().collect();
        // A missing op is a fact whatever else was traced; a pass is only as strong as the coverage,
        // and a model whose image (video, audio) path was never fed is partial at best.
        let verdict = match (missing.is_empty(), coverage) {
            (false, _) => Verdict::Fail,
            (true, Completeness::Incomplete) => Verdict::Incomplete,
            (true, _) if !untraced.is_empty() => Verdict::Partial,
            (true, Completeness::Complete) => Verdict::Pass,
            (true, Completeness::InferenceOnly) => Verdict::PassInference,
        };
        ModelVerdict {
            verdict,
            missing: missing.into_iter().collect(),
            reason: (verdict == Verdict::Partial).then(|| untraced_cause(&untraced)),
            inference_ok: inference_ok && coverage >= Completeness::InferenceOnly && untraced.is_empty(),
            coverage: Some(coverage),
            confidence,
            untraced_inputs: untraced,
        }
    }

    fn evaluation(&mut self, id: &str) -> Option<&Evaluation> {
        if !self.memo.contains_key(id) {
            let profile = self.profiles.get(id).or_else(|| self.exact?.get(id))?;
            self.memo.insert(id.to_string(), evaluate(self.registry, profile));
        }
        self.memo.get(id)
    }

    /// Every evaluation made, by profile id (for the report's traceability section).
    pub fn into_evaluations(self) -> BTreeMap<String, Evaluation> {
        self.memo.into_iter().collect()
    }
}
