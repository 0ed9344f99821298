//! The real Hub snapshots in `../shared/data`, read in place (never committed). A missing file
//! skips its test with a message; CI has them.
mod sweep_support;

use std::collections::HashMap;

use sweep_support::{fixtures, shared_data};
use xla2tpu::ops::{Profiles, Registry};
use xla2tpu::sweep::document::Report;
use xla2tpu::sweep::models::{self, ModelList};
use xla2tpu::sweep::verdict::Verdict;
use xla2tpu::sweep::{Options, sweep};

fn run(list: &ModelList) -> Report {
    let profiles = Profiles::from_dir(&fixtures().join("profiles")).unwrap();
    let tpu = Registry::builtin("torchtpu-0.2.0").unwrap();
    let r = sweep(list, &profiles, &tpu, None, &Options::default());
    let t = &r.totals;
    assert_eq!(Verdict::ALL.iter().map(|v| t.get(*v).models).sum::<usize>(), t.total.models);
    assert_eq!(t.total.downloads, list.models.iter().map(|m| m.downloads).sum::<u64>());
    r
}

fn archs(r: &Report) -> HashMap<&str, usize> {
    r.architectures.iter().map(|a| (a.arch.as_str(), a.total.models)).collect()
}

#[test]
fn enochlev_csv_with_tags_diffusers_timm_and_peft() {
    let Some(path) = shared_data("hf_models_snapshot_enochlev_2024-09-20.csv") else { return };
    let all = models::load_file(&path).unwrap();
    assert_eq!(all.models.len(), 9715);
    let list = all.top(5000);
    assert_eq!(list.models[0].id, "MIT/ast-finetuned-audioset-10-10-0.4593");
    let r = run(&list);
    let a = archs(&r);
    assert!(a["diffusers:StableDiffusionPipeline"] > 200, "{:?}", a.get("diffusers:StableDiffusionPipeline"));
    assert!(a.keys().any(|k| k.starts_with("timm/")));
    let by_id: HashMap<&str, _> = r.models.iter().map(|m| (m.id.as_str(), m)).collect();
    assert_eq!(by_id["timm/resnet50.a1_in1k"].profiles, ["timm/resnet"]);
    assert_eq!(by_id["timm/resnet50.a1_in1k"].result.verdict, Verdict::Pass);
    assert_eq!(by_id["google-bert/bert-base-uncased"].profiles, ["transformers/bert"]);
    assert_eq!(
        by_id["sentence-transformers/all-MiniLM-L6-v2"].profiles,
        ["transformers/bert", "sentence-transformers/SentenceTransformer"]
    );
    // GGUF-only repositories are n/a; custom code without a profile is unknown.
    assert!(r.models.iter().any(|m| m.result.verdict == Verdict::NotApplicable && m.result.reason.as_deref().unwrap().contains("gguf")));
    assert!(r.reasons.iter().any(|x| x.reason.contains("custom code")));
    assert!(r.reasons.iter().any(|x| x.reason.starts_with("PEFT adapter on")));
}

#[test]
fn saranscript_jsonl_in_the_old_api_shape() {
    let Some(path) = shared_data("hf_models_snapshot_saranscript_2022-02-21.jsonl") else { return };
    let list = models::load_file(&path).unwrap();
    assert_eq!(list.models.len(), 10_000);
    let typed = list.models.iter().filter(|m| m.model_type.is_some()).count();
    assert!(typed > 9000, "config.model_type read for {typed}");
    assert_eq!(list.models[0].id, "distilgpt2");
    assert!(!list.models[0].architectures.is_empty());
    run(&list.top(5000));
}

#[test]
fn theexgenesis_csv_deduplicates_ids() {
    let Some(path) = shared_data("hf_models_snapshot_theexgenesis_2025-03-24.csv") else { return };
    let list = models::load_file(&path).unwrap();
    assert_eq!(list.models.len(), 2232);
    let list = list.top(100_000);
    assert_eq!(list.models.len(), 1804, "ids listed in both of its lists count once");
    run(&list);
}

#[test]
fn api_examples_full_entries() {
    let Some(path) = shared_data("hf_api_examples_list_models_full_config_2022-02-21.json") else { return };
    let list = models::load_file(&path).unwrap().top(100);
    assert_eq!(list.models.len(), 9);
    let r = run(&list);
    let m: HashMap<&str, _> = r.models.iter().map(|m| (m.id.as_str(), m)).collect();
    assert_eq!(m["bert-base-uncased"].profiles, ["transformers/bert"]);
    assert_eq!(
        m["sentence-transformers/all-MiniLM-L6-v2"].profiles,
        ["transformers/bert", "sentence-transformers/SentenceTransformer"]
    );
    assert_eq!(m["dog/resnet18-random-classifier"].profiles, ["timm/resnet"]);
    assert!(m["flair/ner-english"].result.reason.as_deref().unwrap().contains("library flair"));
    assert_eq!(m["speechbrain/spkrec-ecapa-voxceleb"].result.verdict, Verdict::Unknown);
}

#[test]
fn llmfit_csv_and_the_embedded_snapshot_agree() {
    let Some(path) = shared_data("hf_models_snapshot_llmfit_2026-10.csv") else { return };
    let source = models::load_file(&path).unwrap();
    let embedded = models::embedded();
    assert_eq!(source.models.len(), 17_700);
    assert_eq!(source.models, embedded.models, "corpus/models is a column subset of the shared CSV");
}
