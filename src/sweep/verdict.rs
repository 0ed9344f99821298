//! Per-model verdicts. Thousands of models share a few hundred profiles, so each profile is
//! evaluated once per backend and the result reused.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::resolve::Resolution;
use crate::ops::{Evaluation, Profiles, Registry, evaluate};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    #[serde(rename = "pass")]
    Pass,
    #[serde(rename = "fail")]
    Fail,
    #[serde(rename = "unknown")]
    Unknown,
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [Verdict::Pass, Verdict::Fail, Verdict::Unknown, Verdict::NotApplicable];

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
            Verdict::NotApplicable => "n/a",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelVerdict {
    pub verdict: Verdict,
    /// Missing ops, union over the model's profiles, sorted.
    pub missing: Vec<String>,
    /// Why the verdict is unknown or n/a.
    pub reason: Option<String>,
    /// No missing op is used at inference (training-only gaps).
    pub inference_ok: bool,
}

impl ModelVerdict {
    fn without_ops(verdict: Verdict, reason: String) -> Self {
        ModelVerdict { verdict, missing: Vec::new(), reason: Some(reason), inference_ok: false }
    }
}

/// Judges resolutions against one backend, memoising evaluations by profile id.
pub struct Judge<'a> {
    registry: &'a Registry,
    profiles: &'a Profiles,
    memo: HashMap<String, Evaluation>,
}

impl<'a> Judge<'a> {
    pub fn new(registry: &'a Registry, profiles: &'a Profiles) -> Self {
        Judge { registry, profiles, memo: HashMap::new() }
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
        for id in ids {
            let Some(eval) = self.evaluation(id) else {
                return ModelVerdict::without_ops(Verdict::Unknown, format!("profile {id} not found"));
            };
            missing.extend(eval.missing.iter().map(|m| m.op.clone()));
            inference_ok &= eval.inference_ok;
        }
        let verdict = if missing.is_empty() { Verdict::Pass } else { Verdict::Fail };
        ModelVerdict { verdict, missing: missing.into_iter().collect(), reason: None, inference_ok }
    }

    fn evaluation(&mut self, id: &str) -> Option<&Evaluation> {
        if !self.memo.contains_key(id) {
            let profile = self.profiles.get(id)?;
            self.memo.insert(id.to_string(), evaluate(self.registry, profile));
        }
        self.memo.get(id)
    }

    /// Every evaluation made, by profile id (for the report's traceability section).
    pub fn into_evaluations(self) -> BTreeMap<String, Evaluation> {
        self.memo.into_iter().collect()
    }
}
