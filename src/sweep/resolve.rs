//! Resolve a Hub repository to the operator profiles that stand for it: `config.model_type` for
//! transformers, the backbone's type plus the module profile for sentence-transformers, the
//! pipeline's components for diffusers, the family in the id for timm and open_clip, the model
//! classes named by the repository for pyannote-audio and speechbrain, the base model plus the
//! adapter type for PEFT adapters. Nothing here fetches or runs code from a model repository:
//! custom code without a known profile stays "unknown".
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
    library_rules: BTreeMap<String, Vec<(String, Vec<String>)>>,
    sentence_transformers: StTable,
    peft_types: Vec<String>,
    peft_name_aliases: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct StTable {
    cross_encoder_pipeline_tags: Vec<String>,
    sentence_transformer: String,
    cross_encoder: String,
}

static TABLE: LazyLock<Table> =
    LazyLock::new(|| yaml_serde::from_str(include_str!("resolve.yaml")).expect("src/sweep/resolve.yaml is valid"));

/// The model types the traced transformers knows (`scripts/transformers-model-types`): its first
/// line names the version.
const TRANSFORMERS_TYPES: &str = include_str!("../../corpus/ops/transformers-model-types.txt");

/// The traced transformers' version, and whether it has `model_type`. A type it lacks has its code
/// only in its repositories (remote code), which nothing here fetches or runs.
fn transformers_knows(model_type: &str) -> (&'static str, bool) {
    static TYPES: LazyLock<(&'static str, std::collections::HashSet<&'static str>)> = LazyLock::new(|| {
        let version = TRANSFORMERS_TYPES
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# transformers "))
            .and_then(|l| l.split(':').next())
            .unwrap_or("(unknown version)");
        (version, TRANSFORMERS_TYPES.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect())
    });
    (TYPES.0, TYPES.1.contains(model_type))
}

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
    /// The model_type, when the list had none and the id named it (see [`super::id_family`]).
    pub model_type_from_id: Option<String>,
}

fn unknown(cause: &'static str, reason: String, arch: String) -> Resolved {
    Resolved { resolution: Resolution::Unknown { cause, reason }, arch, note: None, model_type_from_id: None }
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
            return Resolved { resolution: Resolution::NotApplicable(why), arch, note: None, model_type_from_id: None };
        }
        if lib == "diffusers" || m.diffusers_class.is_some() {
            return self.diffusers(m);
        }
        // Before timm: the timm organisation also hosts open_clip models (timm/ViT-B-16-SigLIP).
        let rules_lib = if lib.is_empty() && m.has_tag("open_clip") { "open_clip" } else { lib };
        if let Some(rules) = TABLE.library_rules.get(rules_lib) {
            // No rule matched: a repository that also carries a transformers config (BiomedCLIP,
            // a speechbrain wav2vec2 recipe) still resolves through its model_type below.
            match self.by_rules(m, rules_lib, rules) {
                r if m.model_type.is_some()
                    && matches!(r.resolution, Resolution::Unknown { cause: "unrecognised architecture", .. }) => {}
                r => return r,
            }
        }
        if lib == "timm" || m.id.starts_with("timm/") {
            return self.timm(m);
        }
        let is_adapter = lib == "peft" || m.adapter_base.is_some() || (m.has_tag("peft") && m.model_type.is_none());
        if is_adapter {
            return self.adapter(m, follow_adapter);
        }
        if let Some(mt) = &m.model_type {
            let r = self.model_type(m, mt);
            return if lib == "sentence-transformers" { self.sentence_transformers(m, r) } else { r };
        }
        let arch = if lib.is_empty() { "(no model_type)".to_string() } else { format!("library {lib}") };
        if m.has_tag("custom_code") {
            return unknown("custom code", "custom code and no model_type to match a profile".into(), arch);
        }
        match lib {
            "" | "transformers" | "sentence-transformers" => {
                let known = self.profiles.ids().into_iter().filter_map(|id| id.strip_prefix("transformers/"));
                match super::id_family::by_name(&m.id, known) {
                    Ok((mt, why)) => {
                        let r = self.model_type(m, &mt);
                        let r = if lib == "sentence-transformers" { self.sentence_transformers(m, r) } else { r };
                        Resolved { model_type_from_id: Some(mt), note: Some(why), ..r }
                    }
                    Err(why) => Resolved {
                        note: Some(why),
                        ..unknown(
                            "no model_type",
                            "no model_type in the model list, and the id names no single known family (no config.json, \
                             a gated repository, or a source without configs)"
                                .into(),
                            arch,
                        )
                    },
                }
            }
            _ => unknown("library without profiles", format!("library {lib} has no operator profiles yet"), arch),
        }
    }

    fn model_type(&self, m: &ModelRecord, mt: &str) -> Resolved {
        let id = format!("transformers/{mt}");
        if self.has(&id) {
            return Resolved {
                resolution: Resolution::Profiles(vec![id.clone()]),
                arch: id,
                note: None,
                model_type_from_id: None,
            };
        }
        if let Some(f) = self.profiles.failure(&id) {
            let reason = format!("tracer failed for model_type {mt}: {}: {}", f.status, f.reason);
            return unknown("tracer failed", reason, id);
        }
        let custom = m.has_tag("custom_code");
        match transformers_knows(mt) {
            (version, false) => {
                let cause = if custom { "custom code" } else { "remote code" };
                let reason = format!(
                    "{cause}: {mt} is not a transformers {version} model type (code in the repository, never run)"
                );
                unknown(cause, reason, id)
            }
            _ if custom => unknown("custom code", format!("custom code; no profile for model_type {mt}"), id),
            _ => unknown("no profile", format!("no profile for model_type {mt}"), id),
        }
    }

    /// A sentence-transformers repository: its backbone (by model_type) plus what the library runs
    /// around it (pooling, dense, normalize; or the CrossEncoder head and activation).
    fn sentence_transformers(&self, m: &ModelRecord, backbone: Resolved) -> Resolved {
        let Resolution::Profiles(mut ids) = backbone.resolution else { return backbone };
        let st = &TABLE.sentence_transformers;
        let cross = m.pipeline_tag.as_deref().is_some_and(|p| st.cross_encoder_pipeline_tags.iter().any(|t| t == p));
        let module = if cross { &st.cross_encoder } else { &st.sentence_transformer };
        if !self.has(module) {
            let reason = match self.profiles.failure(module) {
                Some(f) => format!("tracer failed for {module}: {}: {}", f.status, f.reason),
                None => format!("no profile for {module} (the modules around the {} backbone)", ids.join(" + ")),
            };
            return unknown("no profile", reason, backbone.arch);
        }
        ids.push(module.clone());
        let note = Some(format!("sentence-transformers: backbone {} + {module}", ids[0]));
        Resolved { resolution: Resolution::Profiles(ids), arch: backbone.arch, note, model_type_from_id: None }
    }

    /// Libraries whose repositories name their architecture (open_clip, pyannote-audio,
    /// speechbrain): the first rule whose token is in the repository name. Tags are not used:
    /// they name tasks (pyannote's segmentation repository is tagged speaker-diarization).
    fn by_rules(&self, m: &ModelRecord, lib: &str, rules: &[(String, Vec<String>)]) -> Resolved {
        let name = m.id.rsplit('/').next().unwrap_or(&m.id).to_ascii_lowercase();
        let hit = rules.iter().find(|(token, _)| name.contains(token.as_str()));
        let Some((token, ids)) = hit else {
            let reason = format!("{lib}: no architecture recognised in the repository name");
            return unknown("unrecognised architecture", reason, format!("library {lib}"));
        };
        let arch = ids.join(" + ");
        if let Some(missing) = ids.iter().find(|id| !self.has(id)) {
            let reason = match self.profiles.failure(missing) {
                Some(f) => format!("tracer failed for {missing}: {}: {}", f.status, f.reason),
                None => format!("no profile for {missing}"),
            };
            return unknown("no profile", reason, arch);
        }
        let note = Some(format!("{lib}: {token:?} in the repository name -> {arch}"));
        Resolved { resolution: Resolution::Profiles(ids.clone()), arch, note, model_type_from_id: None }
    }

    fn diffusers(&self, m: &ModelRecord) -> Resolved {
        let Some(class) = m.diffusers_class.as_deref() else {
            return unknown("diffusers", "diffusers repository without a pipeline class".into(), "diffusers".into());
        };
        let arch = format!("diffusers:{class}");
        // A component repository (a VAE, a ControlNet) is its own profile.
        let own = format!("diffusers/{class}");
        if self.has(&own) {
            return Resolved {
                resolution: Resolution::Profiles(vec![own]),
                arch,
                note: None,
                model_type_from_id: None,
            };
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
        Resolved { resolution: Resolution::Profiles(ids), arch, note, model_type_from_id: None }
    }

    fn timm(&self, m: &ModelRecord) -> Resolved {
        let name = m.id.rsplit('/').next().unwrap_or(&m.id);
        let arch_name = name.split('.').next().unwrap_or(name).to_ascii_lowercase();
        let candidates = timm_families(&arch_name);
        if let Some(found) = candidates.iter().map(|f| format!("timm/{f}")).find(|id| self.has(id)) {
            return Resolved {
                resolution: Resolution::Profiles(vec![found.clone()]),
                arch: found,
                note: None,
                model_type_from_id: None,
            };
        }
        let alias = candidates.iter().find_map(|c| TABLE.timm_aliases.get(c).map(|a| (c, format!("timm/{a}"))));
        if let Some((prefix, id)) = alias.filter(|(_, id)| self.has(id)) {
            let note = Some(format!("timm {prefix} is part of the {id} family"));
            return Resolved {
                resolution: Resolution::Profiles(vec![id.clone()]),
                arch: id,
                note,
                model_type_from_id: None,
            };
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
                if let Resolution::Profiles(ids) = &mut r.resolution {
                    // The adapter adds its own ops to the base model's: without its type they
                    // are unchecked, so no verdict.
                    let Some(kind) = adapter_type(m) else {
                        let reason = format!(
                            "PEFT adapter on {base}: adapter type not in the listing (no peft_type, no lora/ia3/... tag)"
                        );
                        return unknown("PEFT adapter", reason, r.arch);
                    };
                    let id = format!("peft/{kind}");
                    if !self.has(&id) {
                        let reason = match self.profiles.failure(&id) {
                            Some(f) => {
                                format!("PEFT adapter on {base}: tracer failed for {id}: {}: {}", f.status, f.reason)
                            }
                            None => format!("PEFT adapter on {base}: no profile for adapter type {kind}"),
                        };
                        return unknown("PEFT adapter", reason, r.arch);
                    }
                    ids.push(id);
                    r.note = Some(format!("PEFT {kind} adapter on {base}"));
                }
                r
            }
            _ => {
                unknown("PEFT adapter", format!("PEFT adapter on {base}, which is not in this listing"), "peft".into())
            }
        }
    }
}

/// A PEFT adapter's type: `config.peft.peft_type`, else a tag naming a PEFT type (`lora`,
/// `prefix-tuning`), else a token of the repository name (`opt-125m-dummy-lora`, `llama_ptune`).
fn adapter_type(m: &ModelRecord) -> Option<String> {
    let known = |t: &str| TABLE.peft_types.iter().any(|k| k == t);
    if let Some(t) = m.adapter_type.as_deref().map(str::to_ascii_lowercase).filter(|t| known(t)) {
        return Some(t);
    }
    if let Some(t) = m.tags.iter().flatten().map(|t| t.to_ascii_lowercase().replace('-', "_")).find(|t| known(t)) {
        return Some(t);
    }
    let name = m.id.rsplit('/').next().unwrap_or(&m.id).to_ascii_lowercase();
    name.split(['-', '_', '.']).find_map(|tok| {
        let tok = TABLE.peft_name_aliases.get(tok).map_or(tok, String::as_str);
        known(tok).then(|| tok.to_string())
    })
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

    fn rec(id: &str, lib: &str, tags: &[&str]) -> ModelRecord {
        ModelRecord {
            id: id.into(),
            library_name: Some(lib.into()),
            tags: Some(tags.iter().map(|t| t.to_string()).collect()),
            ..Default::default()
        }
    }

    fn ids(r: Resolved) -> Vec<String> {
        match r.resolution {
            Resolution::Profiles(ids) => ids,
            other => panic!("{other:?}"),
        }
    }

    fn reason(r: Resolved) -> String {
        match r.resolution {
            Resolution::Unknown { reason, .. } => reason,
            other => panic!("{other:?}"),
        }
    }

    /// The committed corpus has a profile for every id the data table names (a typo or a
    /// forgotten trace would silently turn repositories "unknown").
    #[test]
    fn table_ids_have_committed_profiles() {
        let p = Profiles::embedded();
        for (lib, rules) in &TABLE.library_rules {
            for (_, ids) in rules {
                for id in ids {
                    assert!(p.get(id).is_some(), "{lib}: {id} has no profile in corpus/ops");
                }
            }
        }
        let st = &TABLE.sentence_transformers;
        assert!(p.get(&st.sentence_transformer).is_some() && p.get(&st.cross_encoder).is_some());
        for t in [
            "lora",
            "loha",
            "lokr",
            "ia3",
            "adalora",
            "oft",
            "boft",
            "vera",
            "prefix_tuning",
            "prompt_tuning",
            "p_tuning",
        ] {
            assert!(TABLE.peft_types.iter().any(|k| k == t), "{t}");
            assert!(p.get(&format!("peft/{t}")).is_some(), "peft/{t}");
        }
        for c in ["svd_unet", "svd_vae", "wan_vae", "qwen_image_vae", "dc_ae", "dit", "cogvideox", "ltx", "svd_unet3d"]
        {
            assert!(TABLE.diffusers_components[c].iter().any(|id| p.get(id).is_some()), "{c}");
        }
    }

    #[test]
    fn open_clip_family_from_the_id() {
        let p = Profiles::embedded();
        let r = Resolver::new(p, &[]);
        let oc = |id: &str| rec(id, "open_clip", &["open_clip"]);
        assert_eq!(ids(r.resolve(&oc("laion/CLIP-ViT-B-16-laion2B-s34B-b88K"))), ["open_clip/vit"]);
        assert_eq!(
            ids(r.resolve(&oc("laion/CLIP-ViT-B-32-xlm-roberta-base-laion5B-s13B-b90k"))),
            ["open_clip/hf_text"]
        );
        assert_eq!(ids(r.resolve(&oc("laion/mscoco_finetuned_CoCa-ViT-L-14-laion2B-s13B-b90k"))), ["open_clip/coca"]);
        assert_eq!(ids(r.resolve(&oc("laion/CLIP-convnext_base-laion400M-s13B-b51K"))), ["open_clip/convnext"]);
        assert_eq!(ids(r.resolve(&oc("timm/ViT-B-16-SigLIP"))), ["open_clip/siglip"]);
        // A library_name of open_clip on a repository that names no open_clip architecture.
        let odd = r.resolve(&oc("ali-vilab/modelscope-damo-text-to-video-synthesis"));
        assert!(reason(odd).contains("no architecture recognised"));
        // No rule, but a transformers config: resolved by its model_type.
        let hf = ModelRecord { model_type: Some("clip".into()), ..oc("microsoft/BiomedCLIP-PubMedBERT_256") };
        assert_eq!(ids(r.resolve(&hf)), ["transformers/clip"]);
    }

    #[test]
    fn speech_libraries_by_repository() {
        let p = Profiles::embedded();
        let r = Resolver::new(p, &[]);
        let pa = |id: &str| rec(id, "pyannote-audio", &["pyannote-audio", "pytorch"]);
        assert_eq!(
            ids(r.resolve(&pa("pyannote/speaker-diarization-3.1"))),
            ["pyannote-audio/PyanNet-powerset", "pyannote-audio/WeSpeakerResNet34"]
        );
        assert_eq!(
            ids(r.resolve(&pa("pyannote/speaker-diarization"))),
            ["pyannote-audio/PyanNet", "speechbrain/ECAPA_TDNN"]
        );
        assert_eq!(ids(r.resolve(&pa("pyannote/segmentation-3.0"))), ["pyannote-audio/PyanNet-powerset"]);
        assert_eq!(ids(r.resolve(&pa("pyannote/segmentation"))), ["pyannote-audio/PyanNet"]);
        assert_eq!(
            ids(r.resolve(&pa("pyannote/wespeaker-voxceleb-resnet34-LM"))),
            ["pyannote-audio/WeSpeakerResNet34"]
        );
        assert_eq!(ids(r.resolve(&pa("pyannote/embedding"))), ["pyannote-audio/XVectorSincNet"]);
        assert!(reason(r.resolve(&pa("pyannote/brouhaha"))).contains("no architecture recognised"));
        let sb = |id: &str, tags: &[&str]| rec(id, "speechbrain", tags);
        assert_eq!(
            ids(r.resolve(&sb("speechbrain/spkrec-ecapa-voxceleb", &["speechbrain"]))),
            ["speechbrain/ECAPA_TDNN"]
        );
        // The name's typo "epaca" is listed too; a tag alone does not decide.
        assert_eq!(ids(r.resolve(&sb("TalTechNLP/voxlingua107-epaca-tdnn", &[]))), ["speechbrain/ECAPA_TDNN"]);
        assert!(reason(r.resolve(&sb("x/voxlingua", &["speechbrain", "ECAPA"]))).contains("no architecture"));
        // pyannote's segmentation repositories carry task tags of the diarization pipeline.
        let seg =
            rec("pyannote/segmentation-3.0", "pyannote-audio", &["speaker-diarization", "voice-activity-detection"]);
        assert_eq!(ids(r.resolve(&seg)), ["pyannote-audio/PyanNet-powerset"]);
        assert_eq!(ids(r.resolve(&sb("speechbrain/vad-crdnn-libriparty", &[]))), ["speechbrain/CRDNN"]);
        assert!(reason(r.resolve(&sb("speechbrain/mtl-mimic-voicebank", &[]))).contains("speechbrain"));
    }

    #[test]
    fn sentence_transformers_add_their_modules() {
        let p = Profiles::embedded();
        let r = Resolver::new(p, &[]);
        let st = ModelRecord { model_type: Some("bert".into()), ..rec("s/mini", "sentence-transformers", &[]) };
        let got = r.resolve(&st);
        assert_eq!(got.arch, "transformers/bert", "grouped with its backbone");
        assert_eq!(ids(got), ["transformers/bert", "sentence-transformers/SentenceTransformer"]);
        let ce = ModelRecord { pipeline_tag: Some("text-ranking".into()), ..st.clone() };
        assert_eq!(ids(r.resolve(&ce)), ["transformers/bert", "sentence-transformers/CrossEncoder"]);
        // A backbone without a profile stays unknown for the backbone's reason.
        let odd = ModelRecord { model_type: Some("mamba9".into()), ..st };
        assert_eq!(
            reason(r.resolve(&odd)),
            "remote code: mamba9 is not a transformers 5.24.0 model type (code in the repository, never run)"
        );
    }

    #[test]
    fn peft_adapter_type_from_config_or_tag() {
        let p = Profiles::embedded();
        let base =
            ModelRecord { model_type: Some("llama".into()), ..rec("meta/base", "transformers", &["safetensors"]) };
        let tagged = |tags: &[&str]| {
            let mut t = vec!["peft", "base_model:adapter:meta/base"];
            t.extend_from_slice(tags);
            rec("me/adapter", "peft", &t)
        };
        let listing = vec![base];
        let r = Resolver::new(p, &listing);
        assert_eq!(ids(r.resolve(&tagged(&["lora"]))), ["transformers/llama", "peft/lora"]);
        assert_eq!(ids(r.resolve(&tagged(&["Prefix-Tuning"]))), ["transformers/llama", "peft/prefix_tuning"]);
        let cfg = ModelRecord { adapter_type: Some("ia3".into()), ..tagged(&[]) };
        assert_eq!(ids(r.resolve(&cfg)), ["transformers/llama", "peft/ia3"]);
        assert!(reason(r.resolve(&tagged(&[]))).contains("adapter type not in the listing"));
        // From the repository name: a whole token, aliases included; "dora" is not LoRA's ops.
        let named = |id: &str| ModelRecord { id: id.into(), ..tagged(&[]) };
        assert_eq!(ids(r.resolve(&named("x/opt-125m-dummy-lora"))), ["transformers/llama", "peft/lora"]);
        assert_eq!(ids(r.resolve(&named("x/llama_tweet_ptune"))), ["transformers/llama", "peft/p_tuning"]);
        assert!(reason(r.resolve(&named("x/llama-dora"))).contains("adapter type not in the listing"));
        assert!(reason(r.resolve(&named("x/explorall"))).contains("adapter type not in the listing"));
        // Known type whose trace failed: unknown, with the tracer's reason.
        assert!(reason(r.resolve(&tagged(&["shadow"]))).contains("tracer failed for peft/shadow"));
        assert!(reason(r.resolve(&tagged(&["xlora"]))).contains("no profile for adapter type xlora"));
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
