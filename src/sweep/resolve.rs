//! Resolve a Hub repository to the operator profiles that stand for it: `config.model_type` for
//! transformers and sentence-transformers, the pipeline's components for diffusers, the family
//! in the id for timm, the base model for PEFT adapters. Nothing here fetches or runs code from
//! a model repository: custom code without a known profile stays "unknown".
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use serde::Deserialize;

use super::models::ModelRecord;
use crate::ops::Profiles;

/// The data table in `resolve.yaml` (documented there).
#[derive(Debug, Deserialize)]
struct Table {
    not_pytorch_libraries: Vec<String>,
    non_pytorch_weight_tags: Vec<String>,
    non_pytorch_id_tokens: Vec<String>,
    diffusers_components: BTreeMap<String, Vec<String>>,
    diffusers_pipelines: BTreeMap<String, Vec<String>>,
    timm_aliases: BTreeMap<String, String>,
}

static TABLE: LazyLock<Table> =
    LazyLock::new(|| serde_yaml::from_str(include_str!("resolve.yaml")).expect("src/sweep/resolve.yaml is valid"));

/// What a model resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Profile ids; the model passes when every one passes.
    Profiles(Vec<String>),
    /// No verdict possible; `cause` is a short category for grouping, `reason` the detail.
    Unknown { cause: &'static str, reason: String },
    /// Not a PyTorch checkpoint, so op coverage does not apply.
    NotApplicable(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub resolution: Resolution,
    /// Grouping key for the per-architecture table, e.g. `transformers/llama`,
    /// `diffusers:StableDiffusionPipeline`, `timm/resnet`.
    pub arch: String,
    /// How the resolution was reached when it is not the obvious one (PEFT base, stand-ins).
    pub note: Option<String>,
}

fn unknown(cause: &'static str, reason: String, arch: String) -> Resolved {
    Resolved { resolution: Resolution::Unknown { cause, reason }, arch, note: None }
}

pub struct Resolver<'a> {
    profiles: &'a Profiles,
    /// The listing itself, to find a PEFT adapter's base model.
    by_id: HashMap<&'a str, &'a ModelRecord>,
}

impl<'a> Resolver<'a> {
    pub fn new(profiles: &'a Profiles, listing: &'a [ModelRecord]) -> Self {
        Resolver { profiles, by_id: listing.iter().map(|m| (m.id.as_str(), m)).collect() }
    }

    pub fn resolve(&self, m: &ModelRecord) -> Resolved {
        self.resolve_inner(m, true)
    }

    fn has(&self, id: &str) -> bool {
        self.profiles.get(id).is_some()
    }

    fn resolve_inner(&self, m: &ModelRecord, follow_adapter: bool) -> Resolved {
        let lib = m.library_name.as_deref().unwrap_or("");
        if let Some(why) = not_pytorch(m) {
            let arch = if lib.is_empty() { "(not PyTorch)".to_string() } else { format!("library {lib}") };
            return Resolved { resolution: Resolution::NotApplicable(why), arch, note: None };
        }
        if lib == "diffusers" || m.diffusers_class.is_some() {
            return self.diffusers(m);
        }
        if lib == "timm" || m.id.starts_with("timm/") {
            return self.timm(m);
        }
        let is_adapter = lib == "peft" || m.adapter_base.is_some() || (m.has_tag("peft") && m.model_type.is_none());
        if is_adapter {
            return self.adapter(m, follow_adapter);
        }
        if let Some(mt) = &m.model_type {
            return self.model_type(m, mt);
        }
        let arch = if lib.is_empty() { "(no model_type)".to_string() } else { format!("library {lib}") };
        if m.has_tag("custom_code") {
            return unknown("custom code", "custom code and no model_type to match a profile".into(), arch);
        }
        match lib {
            "" | "transformers" | "sentence-transformers" => unknown(
                "no model_type",
                "no model_type in the model list (no config.json, a gated repository, or a source without configs)"
                    .into(),
                arch,
            ),
            _ => unknown("library without profiles", format!("library {lib} has no operator profiles yet"), arch),
        }
    }

    fn model_type(&self, m: &ModelRecord, mt: &str) -> Resolved {
        let id = format!("transformers/{mt}");
        if self.has(&id) {
            return Resolved { resolution: Resolution::Profiles(vec![id.clone()]), arch: id, note: None };
        }
        if let Some(f) = self.profiles.failure(&id) {
            let reason = format!("tracer failed for model_type {mt}: {}: {}", f.status, f.reason);
            return unknown("tracer failed", reason, id);
        }
        if m.has_tag("custom_code") {
            return unknown("custom code", format!("custom code; no profile for model_type {mt}"), id);
        }
        unknown("no profile", format!("no profile for model_type {mt}"), id)
    }

    fn diffusers(&self, m: &ModelRecord) -> Resolved {
        let Some(class) = m.diffusers_class.as_deref() else {
            return unknown("diffusers", "diffusers repository without a pipeline class".into(), "diffusers".into());
        };
        let arch = format!("diffusers:{class}");
        // A component repository (a VAE, a ControlNet) is its own profile.
        let own = format!("diffusers/{class}");
        if self.has(&own) {
            return Resolved { resolution: Resolution::Profiles(vec![own]), arch, note: None };
        }
        let Some(components) = TABLE.diffusers_pipelines.get(class) else {
            return unknown("diffusers", format!("diffusers class {class} is not in the pipeline table"), arch);
        };
        let mut ids = Vec::new();
        for component in components {
            let candidates = &TABLE.diffusers_components[component];
            match candidates.iter().find(|c| self.has(c)) {
                Some(c) => ids.push(c.clone()),
                None => {
                    let reason = format!("{class}: no profile for component {component} ({})", candidates.join(" or "));
                    return unknown("diffusers", reason, arch);
                }
            }
        }
        let note = Some(format!("{class} = {}", ids.join(" + ")));
        Resolved { resolution: Resolution::Profiles(ids), arch, note }
    }

    fn timm(&self, m: &ModelRecord) -> Resolved {
        let name = m.id.rsplit('/').next().unwrap_or(&m.id);
        let arch_name = name.split('.').next().unwrap_or(name).to_ascii_lowercase();
        let candidates = timm_families(&arch_name);
        if let Some(found) = candidates.iter().map(|f| format!("timm/{f}")).find(|id| self.has(id)) {
            return Resolved { resolution: Resolution::Profiles(vec![found.clone()]), arch: found, note: None };
        }
        let alias = candidates.iter().find_map(|c| TABLE.timm_aliases.get(c).map(|a| (c, format!("timm/{a}"))));
        if let Some((prefix, id)) = alias.filter(|(_, id)| self.has(id)) {
            let note = Some(format!("timm {prefix} is part of the {id} family"));
            return Resolved { resolution: Resolution::Profiles(vec![id.clone()]), arch: id, note };
        }
        let family = candidates.last().cloned().unwrap_or(arch_name);
        unknown("no profile", format!("no profile for timm family {family}"), format!("timm/{family}"))
    }

    fn adapter(&self, m: &ModelRecord, follow: bool) -> Resolved {
        let base = m
            .adapter_base
            .as_deref()
            .or_else(|| m.tag_values("base_model:adapter:").next())
            .or_else(|| m.tag_values("base_model:").find(|v| !v.contains(':')));
        let Some(base) = base else {
            return unknown("PEFT adapter", "PEFT adapter without a base model".into(), "peft".into());
        };
        match self.by_id.get(base) {
            Some(b) if follow => {
                let mut r = self.resolve_inner(b, false);
                r.note = Some(format!("PEFT adapter on {base}"));
                if let Resolution::Unknown { reason, .. } = &mut r.resolution {
                    *reason = format!("PEFT adapter on {base}: {reason}");
                }
                r
            }
            _ => {
                unknown("PEFT adapter", format!("PEFT adapter on {base}, which is not in this listing"), "peft".into())
            }
        }
    }
}

/// Why a repository is not a PyTorch checkpoint, if it is not.
fn not_pytorch(m: &ModelRecord) -> Option<String> {
    let t = &*TABLE;
    if let Some(lib) = m.library_name.as_deref().filter(|l| t.not_pytorch_libraries.iter().any(|x| x == l)) {
        return Some(format!("not a PyTorch checkpoint (library {lib})"));
    }
    match &m.tags {
        Some(_) => {
            let torch_weights = m.has_tag("pytorch") || m.has_tag("safetensors");
            let other = t.non_pytorch_weight_tags.iter().find(|w| m.has_tag(w));
            other.filter(|_| !torch_weights).map(|w| format!("not a PyTorch checkpoint ({w} weights only)"))
        }
        // Sources without tags: the id is all there is (`unsloth/Qwen3-4B-GGUF`, `mlx-community/…`).
        None if m.library_name.is_none() => {
            let lower = m.id.to_ascii_lowercase();
            let token = lower
                .split(['-', '_', '.', '/'])
                .find(|tok| t.non_pytorch_id_tokens.iter().any(|x| x == tok))?
                .to_string();
            Some(format!("not a PyTorch checkpoint ({token}, inferred from the id)"))
        }
        None => None,
    }
}

/// Candidate timm families for an architecture name, most specific first:
/// `vit_base_patch16_224` → vit_base_patch16_224, vit_base_patch16, vit_base, vit;
/// `resnet50` → resnet50, resnet; `tf_efficientnet_b1` also tries efficientnet_b1 … efficientnet.
pub fn timm_families(arch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for name in [arch, arch.strip_prefix("tf_").unwrap_or(arch)] {
        // Hub ids outside the `timm/` org often use dashes (`resnet18-random-classifier`).
        let parts: Vec<&str> = name.split(['_', '-']).collect();
        for n in (1..=parts.len()).rev() {
            let prefix = parts[..n].join("_");
            push(&prefix);
            push(prefix.trim_end_matches(|c: char| c.is_ascii_digit()));
        }
    }
    // Keep the bare family (e.g. "efficientnet" over "tf") last, as the name in messages.
    if arch.starts_with("tf_") {
        out.retain(|f| f != "tf");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timm_family_candidates() {
        assert_eq!(timm_families("resnet50"), ["resnet50", "resnet"]);
        let v = timm_families("vit_base_patch16_224");
        assert_eq!(v.first().unwrap(), "vit_base_patch16_224");
        assert_eq!(v.last().unwrap(), "vit");
        assert!(timm_families("tf_efficientnet_b1").contains(&"efficientnet".to_string()));
    }

    #[test]
    fn table_is_consistent() {
        assert!(TABLE.timm_aliases.values().all(|family| !TABLE.timm_aliases.contains_key(family)));
        for (pipe, comps) in &TABLE.diffusers_pipelines {
            for c in comps {
                assert!(TABLE.diffusers_components.contains_key(c), "{pipe}: unknown component {c}");
            }
        }
    }
}
