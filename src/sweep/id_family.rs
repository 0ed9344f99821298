//! A model with no `model_type` in the list, resolved from its id where the id leaves no doubt
//! (issue 46): either other rows of the list with the same name stem (the id less its size,
//! quantisation and base/instruct words) all have one model_type, or the id spells exactly one
//! profiled type, no other profiled type extends that name (`nemotron` → `nemotron_h`,
//! `qwen3` → `qwen3_moe`) and no version follows it (`LLaVA-OneVision-1.5` is not
//! `llava_onevision`). A speculative-decoding head names the model it drafts for, not its own
//! architecture, so it is never resolved by name. Anything else stays unknown.
use std::collections::{BTreeMap, HashMap};

/// Tokens that say how a checkpoint is stored or tuned, not what it is.
const NOT_ARCH: &[&str] = &[
    "fp8", "bf16", "fp16", "fp32", "awq", "gptq", "int4", "int8", "w4a16", "w8a8", "w4a4", "w8a16", "nvfp4", "mxfp4",
    "fp4", "block", "dynamic", "4bit", "8bit", "exl2", "base", "instruct", "chat", "it", "hf",
];
/// Markers of a draft model for speculative decoding (EAGLE, Medusa, speculators).
const DRAFT: &[&str] = &["speculator", "eagle", "medusa", "draft"];

fn tokens(id: &str) -> Vec<String> {
    let name = id.rsplit_once('/').map_or(id, |(_, n)| n);
    name.split(['-', '_', ' ']).filter(|t| !t.is_empty()).map(str::to_ascii_lowercase).collect()
}

/// `30b`, `a3b`, `0.5b`, `82m`, `8x7b`, `128k`.
fn is_size(t: &str) -> bool {
    let t = t.strip_prefix('a').unwrap_or(t);
    let Some(num) = t.strip_suffix(['b', 'm', 'k']) else { return false };
    let num =
        num.split_once('x').map_or(num, |(n, rest)| if n.bytes().all(|b| b.is_ascii_digit()) { rest } else { "" });
    !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit() || b == b'.') && num.as_bytes()[0].is_ascii_digit()
}

/// `1.5`, `v2`, `2601`, `.5` (the rest of `lfm2.5` after `lfm2`).
fn is_version(t: &str) -> bool {
    let t = t.strip_prefix('.').or_else(|| t.strip_prefix('v')).unwrap_or(t);
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// The id's name without size, storage and tuning words: `NVIDIA-Nemotron-Nano-12B-v2-Base`
/// and `NVIDIA-Nemotron-Nano-9B-v2` both give `nvidia-nemotron-nano-v2`.
pub fn stem(id: &str) -> String {
    tokens(id).into_iter().filter(|t| !is_size(t) && !NOT_ARCH.contains(&t.as_str())).collect::<Vec<_>>().join("-")
}

/// The model_type every row of the list with the same stem has, when there is exactly one.
pub struct Siblings(HashMap<String, BTreeMap<String, usize>>);

impl Siblings {
    /// From the list's (id, model_type) rows.
    pub fn of<'a>(rows: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Siblings {
        let mut by: HashMap<String, BTreeMap<String, usize>> = HashMap::new();
        for (id, model_type) in rows {
            if let Some(t) = model_type {
                *by.entry(stem(id)).or_default().entry(t.to_string()).or_default() += 1;
            }
        }
        Siblings(by)
    }

    /// `(model_type, evidence)`.
    pub fn resolve(&self, id: &str) -> Option<(String, String)> {
        let s = stem(id);
        let types = self.0.get(&s).filter(|t| t.len() == 1)?;
        let (t, n) = types.iter().next()?;
        let rows = if *n == 1 { "1 other row".to_string() } else { format!("{n} other rows") };
        Some((t.clone(), format!("model_type {t} resolved from the id: {rows} of the list named like {s} have it")))
    }
}

/// `(model_type, evidence)` when the id spells exactly one of `known` unambiguously, else why not.
pub fn by_name<'a>(id: &str, known: impl IntoIterator<Item = &'a str>) -> Result<(String, String), String> {
    let toks = tokens(id);
    if toks.iter().any(|t| DRAFT.iter().any(|d| t.contains(d))) {
        return Err("a speculative-decoding head: its id names the model it drafts for".into());
    }
    let known: Vec<&str> = known.into_iter().collect();
    // Every run of tokens that spells a known type (`nemotron-h` → nemotron_h), with what follows.
    let mut named: Vec<(&str, Option<String>)> = Vec::new();
    for i in 0..toks.len() {
        for j in i + 1..=toks.len() {
            let run = toks[i..j].join("_");
            for t in &known {
                let rest = if run == *t {
                    toks.get(j).cloned()
                } else if let Some(r) = run.strip_prefix(t).filter(|r| r.starts_with('.') && j == i + 1) {
                    Some(r.to_string()) // lfm2.5: lfm2 followed by version .5
                } else {
                    continue;
                };
                named.push((t, rest));
            }
        }
    }
    // A type another named type extends is not a second candidate (nemotron in Nemotron-H).
    let extends = |long: &str, short: &str| long != short && long.starts_with(short);
    let spelled: Vec<&str> = named.iter().map(|(t, _)| *t).collect();
    let mut candidates: Vec<&(&str, Option<String>)> =
        named.iter().filter(|(t, _)| !spelled.iter().any(|o| extends(o, t))).collect();
    candidates.dedup_by_key(|(t, _)| *t);
    match candidates.as_slice() {
        [] => Err("the id names no known type".into()),
        [(t, rest)] => {
            let wider: Vec<&str> = known.iter().copied().filter(|o| extends(o, t)).collect();
            if !wider.is_empty() {
                let shown = wider.iter().take(3).copied().collect::<Vec<_>>().join(", ");
                return Err(format!("the id names {t}, which other known types extend ({shown})"));
            }
            if let Some(v) = rest.as_deref().filter(|r| is_version(r) && !is_size(r)) {
                return Err(format!("the id names {t} {v}, a version the type does not carry"));
            }
            Ok((t.to_string(), format!("model_type {t} resolved from the id, which names that type and no other")))
        }
        many => {
            let names: Vec<&str> = many.iter().map(|(t, _)| *t).collect();
            Err(format!("the id names {}", names.join(" and ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &[
        "llama",
        "llama4",
        "nemotron",
        "nemotron_h",
        "qwen3",
        "qwen3_moe",
        "llava",
        "llava_onevision",
        "dia",
        "lfm2",
        "jina_embeddings_v3",
        "gpt_oss",
        "bert",
        "bert_generation",
        "longcat_flash",
    ];

    fn name(id: &str) -> Result<String, String> {
        by_name(id, KNOWN.iter().copied()).map(|(t, _)| t)
    }

    #[test]
    fn stems_drop_size_storage_and_tuning_words() {
        assert_eq!(stem("nvidia/NVIDIA-Nemotron-Nano-12B-v2"), "nvidia-nemotron-nano-v2");
        assert_eq!(stem("unsloth/NVIDIA-Nemotron-Nano-9B-v2-Base"), "nvidia-nemotron-nano-v2");
        assert_eq!(stem("stelterlab/NVIDIA-Nemotron-3-Nano-30B-A3B-AWQ"), "nvidia-nemotron-3-nano");
        assert_eq!(stem("RedHatAI/Llama-3.3-70B-Instruct-FP8-block"), "llama-3.3");
        assert_eq!(stem("mistralai/Mixtral-8x7B-v0.1"), "mixtral-v0.1");
        assert_eq!(stem("hexgrad/Kokoro-82M"), "kokoro");
    }

    #[test]
    fn siblings_must_agree() {
        let list = [
            ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", Some("nemotron_h")),
            ("nvidia/NVIDIA-Nemotron-Nano-9B-v2-Base", Some("nemotron_h")),
            ("a/Foo-7B", Some("llama")),
            ("b/Foo-13B", Some("mistral")),
        ];
        let s = Siblings::of(list);
        let (t, why) = s.resolve("nvidia/NVIDIA-Nemotron-Nano-12B-v2").unwrap();
        assert_eq!(t, "nemotron_h");
        assert!(why.contains("2 other rows of the list named like nvidia-nemotron-nano-v2"), "{why}");
        assert!(s.resolve("c/Foo-70B").is_none(), "its siblings disagree");
        assert!(s.resolve("c/Bar-70B").is_none(), "no sibling");
    }

    #[test]
    fn a_name_resolves_only_when_it_names_one_type_unambiguously() {
        assert_eq!(
            name("RedHatAI/Llama-3.3-70B-Instruct-FP8-block").unwrap_err(),
            "the id names llama, which other known types extend (llama4)"
        );
        assert_eq!(name("nvidia/Nemotron-H-8B-Base-8K").unwrap(), "nemotron_h");
        assert_eq!(name("nari-labs/Dia-1.6B").unwrap(), "dia", "1.6B is a size, not a version");
        assert_eq!(name("jinaai/jina-embeddings-v3").unwrap(), "jina_embeddings_v3");
        assert_eq!(name("meituan-longcat/LongCat-Flash-Chat").unwrap(), "longcat_flash");
        // Ambiguous: two families, a family others extend, a version the type lacks, a draft head.
        assert_eq!(name("nvidia/Llama-3.1-Nemotron-Nano-VL-8B-V1").unwrap_err(), "the id names llama and nemotron");
        assert!(name("dicta-il/DictaLM-3.0-Nemotron-12B-Instruct-W4A16").unwrap_err().contains("nemotron_h"));
        assert!(name("sonoisa/sentence-bert-base-ja-mean-tokens").unwrap_err().contains("bert_generation"));
        assert_eq!(
            name("lmms-lab/LLaVA-OneVision-1.5-8B-Instruct").unwrap_err(),
            "the id names llava_onevision 1.5, a version the type does not carry"
        );
        assert_eq!(
            name("LiquidAI/LFM2.5-Audio-1.5B").unwrap_err(),
            "the id names lfm2 .5, a version the type does not carry"
        );
        assert!(name("RedHatAI/Qwen3-32B-speculator.eagle3").unwrap_err().starts_with("a speculative-decoding head"));
        assert!(name("RedHatAI/gpt-oss-20b-speculator.eagle3").is_err());
        assert_eq!(name("openbmb/VoxCPM2").unwrap_err(), "the id names no known type");
    }
}
