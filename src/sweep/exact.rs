//! `sweep --exact DIR`: per-config profiles written by `xla2tpu ops trace --configs/--hub`.
//! A type profile stands for every model of its type, traced from a shrunk default config;
//! a per-config profile is traced from the model's own `config.json` (depth reduced, every
//! other field kept), so where one exists it replaces the type-level answer.
//!
//! Layout (the tracer's `exact` output): `DIR/index.json` maps each model id to the hash of its
//! config and the trace's status; `DIR/profiles/<hash>.json` are ordinary profiles with id
//! `config/<hash>`.
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::models::ModelRecord;
use super::resolve::{Resolution, Resolved};
use crate::ops::Profiles;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Index {
    models: BTreeMap<String, Entry>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Entry {
    config: String,
    status: String,
}

pub struct Exact {
    source: String,
    index: Index,
    profiles: Profiles,
}

impl Exact {
    pub fn load(dir: &Path) -> Result<Exact> {
        let index_path = dir.join("index.json");
        let text = std::fs::read_to_string(&index_path).with_context(|| format!("reading {}", index_path.display()))?;
        let index: Index =
            serde_json::from_str(&text).with_context(|| format!("{} is not valid", index_path.display()))?;
        let profiles_dir = dir.join("profiles");
        let profiles = if profiles_dir.is_dir() { Profiles::from_dir(&profiles_dir)? } else { Profiles::default() };
        if let Some(first) = profiles.load_errors().first() {
            eprintln!("warning: {} per-config profiles did not load (first: {first})", profiles.load_errors().len());
        }
        Ok(Exact { source: dir.display().to_string(), index, profiles })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn profiles(&self) -> &Profiles {
        &self.profiles
    }

    /// The model's per-config resolution, when its config was traced and left a profile.
    /// A failed per-config trace keeps the type-level answer (the caller says which was used).
    pub fn resolve(&self, m: &ModelRecord, type_level: &Resolved) -> Option<Resolved> {
        let entry = self.index.models.get(&m.id)?;
        if !matches!(entry.status.as_str(), "ok" | "partial") {
            return None;
        }
        let id = format!("config/{}", entry.config);
        self.profiles.get(&id)?;
        Some(Resolved {
            resolution: Resolution::Profiles(vec![id.clone()]),
            arch: type_level.arch.clone(),
            note: Some(format!("traced from its own config.json ({id})")),
            model_type_from_id: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_traced_configs_with_a_profile_replace_the_type_profile() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("profiles")).unwrap();
        std::fs::write(
            dir.path().join("index.json"),
            r#"{"schema": 1, "models": {
                "org/a": {"config": "h1", "status": "ok"},
                "org/b": {"config": "h2", "status": "error", "reason": "boom"},
                "org/c": {"config": "h3", "status": "ok"}}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("profiles/h1.json"),
            r#"{"schema": 1, "id": "config/h1", "library": "transformers", "name": "bert", "status": "ok", "ops": []}"#,
        )
        .unwrap();
        let exact = Exact::load(dir.path()).unwrap();
        let type_level = Resolved {
            resolution: Resolution::Profiles(vec!["transformers/bert".into()]),
            arch: "transformers/bert".into(),
            note: None,
            model_type_from_id: None,
        };
        let model = |id: &str| ModelRecord { id: id.into(), ..ModelRecord::default() };
        let a = exact.resolve(&model("org/a"), &type_level).unwrap();
        assert_eq!(a.resolution, Resolution::Profiles(vec!["config/h1".into()]));
        assert_eq!(a.arch, "transformers/bert");
        assert!(exact.resolve(&model("org/b"), &type_level).is_none(), "a failed trace keeps the type profile");
        assert!(exact.resolve(&model("org/c"), &type_level).is_none(), "an index row without a profile file");
        assert!(exact.resolve(&model("org/d"), &type_level).is_none());
    }
}
