//! The sweep core on hand-made profiles and the real TorchTPU / torch_xla registries:
//! resolution, verdicts, totals, blockers, the greedy plan, the comparison and the renderers.
mod sweep_support;

use std::path::Path;

use sweep_support::fixtures;
use xla2tpu::ops::{Profiles, Registry};
use xla2tpu::sweep::document::Report;
use xla2tpu::sweep::models::{self, ModelList, ModelRecord};
use xla2tpu::sweep::report::{self, Format};
use xla2tpu::sweep::resolve::{Resolution, Resolver};
use xla2tpu::sweep::verdict::Verdict;
use xla2tpu::sweep::{Options, sweep};

fn profiles() -> Profiles {
    Profiles::from_dir(&fixtures().join("profiles")).unwrap()
}

fn fixture_list() -> ModelList {
    models::load_file(&fixtures().join("models.json")).unwrap().top(100)
}

fn run(compare: bool) -> Report {
    let tpu = Registry::builtin("torchtpu-0.2.0").unwrap();
    let xla = Registry::builtin("torch_xla-2.9").unwrap();
    sweep(&fixture_list(), &profiles(), &tpu, compare.then_some(&xla), &Options::default())
}

fn model<'a>(r: &'a Report, id: &str) -> &'a xla2tpu::sweep::ModelRow {
    r.models.iter().find(|m| m.id == id).unwrap_or_else(|| panic!("{id} not in the report"))
}

fn resolve(m: &ModelRecord, listing: &[ModelRecord]) -> Resolution {
    let p = profiles();
    Resolver::new(&p, listing).resolve(m).resolution
}

fn rec(id: &str) -> ModelRecord {
    ModelRecord { id: id.into(), tags: Some(vec!["safetensors".into()]), ..Default::default() }
}

#[test]
fn resolution_rules() {
    let typed =
        |mt: &str| ModelRecord { model_type: Some(mt.into()), library_name: Some("transformers".into()), ..rec("a/b") };
    assert_eq!(resolve(&typed("llama"), &[]), Resolution::Profiles(vec!["transformers/llama".into()]));
    match resolve(&typed("qwen3_5"), &[]) {
        Resolution::Unknown { cause, reason } => {
            assert_eq!(cause, "tracer failed");
            assert!(reason.contains("tracer failed") && reason.contains("ValueError"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    match resolve(&typed("mamba9"), &[]) {
        // Not a type of the traced transformers: its code is the repository's, never run.
        Resolution::Unknown { cause, reason } => {
            assert_eq!(cause, "remote code");
            assert!(reason.contains("mamba9 is not a transformers 5.24.0 model type"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    // sentence-transformers: the underlying model type plus the library's modules.
    let st = ModelRecord { library_name: Some("sentence-transformers".into()), ..typed("bert") };
    assert_eq!(
        resolve(&st, &[]),
        Resolution::Profiles(vec!["transformers/bert".into(), "sentence-transformers/SentenceTransformer".into()])
    );
    // A reranker runs the CrossEncoder, which these fixtures do not profile.
    let reranker = ModelRecord { pipeline_tag: Some("text-classification".into()), ..st.clone() };
    match resolve(&reranker, &[]) {
        Resolution::Unknown { reason, .. } => {
            assert!(reason.contains("sentence-transformers/CrossEncoder"), "{reason}")
        }
        other => panic!("{other:?}"),
    }

    // custom code without a profile is unknown, never run.
    let custom = ModelRecord { tags: Some(vec!["custom_code".into(), "safetensors".into()]), ..typed("acme") };
    assert!(matches!(resolve(&custom, &[]), Resolution::Unknown { cause: "custom code", .. }));
    let custom_untyped = ModelRecord { tags: Some(vec!["custom_code".into()]), ..rec("x/y") };
    assert!(matches!(resolve(&custom_untyped, &[]), Resolution::Unknown { cause: "custom code", .. }));

    // diffusers: pipeline → components; the CLIP text encoder falls back to full CLIP.
    let sd = ModelRecord {
        library_name: Some("diffusers".into()),
        diffusers_class: Some("StableDiffusionPipeline".into()),
        ..rec("s/d")
    };
    assert_eq!(
        resolve(&sd, &[]),
        Resolution::Profiles(vec![
            "diffusers/UNet2DConditionModel".into(),
            "diffusers/AutoencoderKL".into(),
            "transformers/clip".into()
        ])
    );
    let vae = ModelRecord { diffusers_class: Some("AutoencoderKL".into()), ..rec("m/vae") };
    assert_eq!(resolve(&vae, &[]), Resolution::Profiles(vec!["diffusers/AutoencoderKL".into()]));
    let odd = ModelRecord { diffusers_class: Some("WeirdPipeline".into()), ..rec("w/p") };
    assert!(matches!(resolve(&odd, &[]), Resolution::Unknown { cause: "diffusers", .. }));

    // timm: family from the id.
    let timm = |id: &str| ModelRecord { library_name: Some("timm".into()), ..rec(id) };
    assert_eq!(resolve(&timm("timm/resnet50.a1_in1k"), &[]), Resolution::Profiles(vec!["timm/resnet".into()]));
    assert_eq!(resolve(&timm("timm/vit_base_patch16_224.augreg"), &[]), Resolution::Profiles(vec!["timm/vit".into()]));
    assert_eq!(
        resolve(&timm("timm/wide_resnet50_2.racm_in1k"), &[]),
        Resolution::Profiles(vec!["timm/resnet".into()]),
        "alias"
    );
    assert_eq!(resolve(&timm("dog/resnet18-random-classifier"), &[]), Resolution::Profiles(vec!["timm/resnet".into()]));
    match resolve(&timm("timm/convnext_tiny.in12k"), &[]) {
        Resolution::Unknown { reason, .. } => assert_eq!(reason, "no profile for timm family convnext"),
        other => panic!("{other:?}"),
    }

    // PEFT: the base model's type when the base is in the listing.
    let base = typed("llama");
    let base = ModelRecord { id: "meta/base".into(), ..base };
    let adapter = ModelRecord {
        library_name: Some("peft".into()),
        tags: Some(vec!["peft".into(), "base_model:adapter:meta/base".into()]),
        ..rec("me/adapter")
    };
    let listing = vec![base.clone(), adapter.clone()];
    // Base found, but the adapter's own ops are unchecked without its type.
    match resolve(&adapter, &listing) {
        Resolution::Unknown { cause: "PEFT adapter", reason } => assert!(reason.contains("adapter type"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(resolve(&adapter, &[]), Resolution::Unknown { cause: "PEFT adapter", .. }));
    // Type known (config, tag or name token): base + the adapter type's profile, when there is one.
    let via_config = ModelRecord {
        adapter_base: Some("meta/base".into()),
        adapter_type: Some("lora".into()),
        library_name: Some("peft".into()),
        ..rec("me/adapter2")
    };
    assert_eq!(
        resolve(&via_config, &listing),
        Resolution::Profiles(vec!["transformers/llama".into(), "peft/lora".into()])
    );
    let ia3 = ModelRecord { adapter_type: Some("ia3".into()), ..via_config };
    match resolve(&ia3, &listing) {
        Resolution::Unknown { reason, .. } => assert!(reason.contains("no profile for adapter type ia3"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn not_pytorch_checkpoints() {
    let na = |m: &ModelRecord| matches!(resolve(m, &[]), Resolution::NotApplicable(_));
    let with_tags = |tags: &[&str]| ModelRecord {
        model_type: Some("llama".into()),
        tags: Some(tags.iter().map(|t| t.to_string()).collect()),
        ..rec("a/b")
    };
    assert!(na(&with_tags(&["transformers", "gguf"])), "GGUF only");
    assert!(!na(&with_tags(&["transformers", "gguf", "safetensors"])), "GGUF beside safetensors is still PyTorch");
    assert!(na(&ModelRecord { library_name: Some("mlx".into()), ..rec("a/b") }));
    assert!(na(&ModelRecord { library_name: Some("keras".into()), ..rec("a/b") }));
    // Without tags (the llmfit snapshot) the id decides.
    let bare = |id: &str| ModelRecord { id: id.into(), model_type: Some("qwen3".into()), ..Default::default() };
    assert!(na(&bare("unsloth/Qwen3-4B-GGUF")));
    assert!(na(&bare("mlx-community/Qwen3-4B-4bit")));
    assert!(na(&bare("lmstudio-community/Qwen3.5-9B-MLX-4bit")));
    assert!(!na(&bare("Qwen/Qwen3-4B")));
    assert!(!na(&bare("someone/mlxnet-7b")), "a token, not a substring");
}

#[test]
fn verdicts_and_totals_on_fixtures() {
    let r = run(false);
    let v = |id: &str| model(&r, id).result.verdict;
    assert_eq!(v("meta-llama/Llama-3.2-1B"), Verdict::Pass, "SDPA maps to TorchTPU's overrideable kernel");
    assert_eq!(v("stabilityai/stable-diffusion-2-1"), Verdict::Pass);
    assert_eq!(v("timm/resnet50.a1_in1k"), Verdict::Pass);
    assert_eq!(v("someone/llama-lora"), Verdict::Pass);
    assert_eq!(v("google-bert/bert-base-uncased"), Verdict::Fail);
    assert_eq!(v("Qwen/Qwen3.5-4B"), Verdict::Unknown);
    assert_eq!(v("bartowski/gemma-2-27b-it-GGUF"), Verdict::NotApplicable);
    assert_eq!(v("mlx-community/Qwen3-4B-4bit"), Verdict::NotApplicable);

    let bert = model(&r, "google-bert/bert-base-uncased");
    assert_eq!(bert.result.missing, ["aten::_weight_norm_interface_backward"]);
    assert!(bert.result.inference_ok, "a backward-only gap leaves inference covered");
    let gpt2 = model(&r, "openai-community/gpt2");
    assert_eq!(gpt2.result.missing, ["aten::_aminmax", "aten::_conv_depthwise2d"]);
    assert_eq!(model(&r, "someone/llama-lora").note.as_deref(), Some("PEFT lora adapter on meta-llama/Llama-3.2-1B"));
    assert_eq!(model(&r, "someone/llama-lora").profiles, ["transformers/llama", "peft/lora"]);

    let t = &r.totals;
    assert_eq!((t.pass.models, t.fail.models, t.unknown.models, t.not_applicable.models), (6, 7, 5, 2));
    assert_eq!(t.total.models, 20);
    // Every number is a sum over the rows.
    for verdict in Verdict::ALL {
        let rows: Vec<_> = r.models.iter().filter(|m| m.result.verdict == verdict).collect();
        assert_eq!(t.get(verdict).models, rows.len());
        assert_eq!(t.get(verdict).downloads, rows.iter().map(|m| m.downloads).sum::<u64>());
    }
    let pytorch = t.total.downloads - t.not_applicable.downloads;
    assert!((t.pass_rate.by_downloads - 100.0 * t.pass.downloads as f64 / pytorch as f64).abs() < 1e-9);
    assert_eq!(model(&r, "zero/downloads").downloads, 0);
    assert!(r.source.notes.iter().any(|n| n.contains("downloads = 0")));
}

#[test]
fn blockers_and_greedy_plan() {
    let r = run(false);
    let b = |op: &str| r.blockers.iter().find(|b| b.op == op).unwrap();
    // _aminmax: gpt2 (700), qwen3 (600), <script> (gpt2, 130).
    assert_eq!((b("aten::_aminmax").blocks.models, b("aten::_aminmax").blocks.downloads), (3, 1430));
    assert_eq!((b("aten::_aminmax").alone.models, b("aten::_aminmax").alone.downloads), (1, 600));
    assert_eq!(r.blockers[0].op, "aten::_aminmax", "ranked by downloads blocked");
    assert_eq!(b("aten::_aminmax").examples[0], "openai-community/gpt2");

    // Step 1 flips the most downloads: bert (900) + MiniLM (150) via the backward op.
    let steps = &r.plan.steps;
    assert_eq!(steps[0].op, "aten::_weight_norm_interface_backward");
    assert_eq!((steps[0].flipped.models, steps[0].flipped.downloads), (2, 1050));
    assert_eq!(steps.last().unwrap().rate.by_count, 100.0 * 13.0 / 18.0, "all fails flip once every op is in");
    assert!(steps.windows(2).all(|w| w[0].rate.by_downloads <= w[1].rate.by_downloads));
    assert_eq!(steps.iter().map(|s| s.flipped.models).sum::<usize>(), r.totals.fail.models);
}

#[test]
fn compare_with_torch_xla() {
    let r = run(true);
    let c = r.comparison.as_ref().unwrap();
    assert_eq!(c.backend.name, "torch_xla-2.9");
    let llama = c.differences.iter().find(|d| d.id == "meta-llama/Llama-3.2-1B").unwrap();
    assert_eq!((llama.verdict, llama.compare_verdict), (Verdict::Pass, Verdict::Fail));
    assert_eq!(llama.missing_only_there, ["aten::_add_relu.Tensor"]);
    let qwen2 = c.differences.iter().find(|d| d.id == "Qwen/Qwen2.5-7B").unwrap();
    assert_eq!(qwen2.missing_only_here, ["aten::_linalg_eigh.eigenvalues"]);
    assert!(r.profiles["transformers/llama"].compare.is_some());
}

#[test]
fn json_report_traces_numbers_to_profiles_and_registry() {
    let r = run(false);
    let json: serde_json::Value = serde_json::from_str(&report::render(&r, Format::Json)).unwrap();
    assert_eq!(json["backend"]["name"], "torchtpu-0.2.0");
    assert!(json["backend"]["provenance"].as_str().unwrap().contains("torch-tpu 0.2.0"));
    assert!(json["caveat"].as_str().unwrap().contains("necessary, not sufficient"));
    let llama = &json["profiles"]["transformers/llama"];
    assert_eq!(llama["versions"]["torch"], "2.15.0");
    assert_eq!(llama["evaluation"]["pass"], true);
    let gpt2 = json["models"].as_array().unwrap().iter().find(|m| m["id"] == "openai-community/gpt2").unwrap();
    assert_eq!(gpt2["verdict"], "fail");
    assert_eq!(gpt2["profiles"][0], "transformers/gpt2");
    let missing = &json["profiles"]["transformers/gpt2"]["evaluation"]["missing"];
    assert_eq!(missing.as_array().unwrap().len(), 2);
    assert!(missing[0]["reason"].as_str().unwrap().contains("TorchTPU"));
}

#[test]
fn renderers_escape_hostile_ids() {
    let r = run(true);
    let html = report::render(&r, Format::Html);
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"));
    assert!(!html.contains("<script>"), "no script element at all");
    assert!(no_external_refs(&html));
    assert!(html.contains("<div class=\"blockers\"") && html.contains("Top blockers"), "the blockers chart");
    assert!(html.contains("necessary, not sufficient"));

    let md = report::render(&r, Format::Md);
    assert!(md.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(md.contains("../../etc/passwd"));

    let csv = report::render(&r, Format::Csv);
    let mut rdr = csv::Reader::from_reader(csv.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    assert_eq!(&headers[0], "rank");
    assert!(headers.iter().any(|h| h == "verdict_torch_xla-2.9"));
    let rows: Vec<_> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().any(|row| &row[1] == "<script>alert(1)</script>"), "CSV keeps data verbatim");

    let text = report::render(&r, Format::Text);
    assert!(text.contains("pass rate") && text.contains("fix order") && text.contains("necessary, not sufficient"));
}

/// Links may appear as text (attributions), never as resources the page loads.
fn no_external_refs(html: &str) -> bool {
    !["src=\"http", "href=\"http", "url(http", "@import"].iter().any(|p| html.contains(p))
}

#[test]
fn csv_and_json_lines_files() {
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("m.csv");
    std::fs::write(&csv_path, "model_id,downloads,model_type,library_name,pipeline_tag\nmeta-llama/x,10,llama,transformers,text-generation\nb/y,20,,,\n").unwrap();
    let list = models::load_file(&csv_path).unwrap().top(10);
    assert_eq!(list.models[0].id, "b/y");
    assert_eq!(list.models[1].model_type.as_deref(), Some("llama"));

    let jsonl = dir.path().join("m.jsonl");
    std::fs::write(
        &jsonl,
        "{\"modelId\": \"gpt2\", \"downloads\": 3, \"config\": {\"model_type\": \"gpt2\"}}\n\n{\"id\": \"b/c\"}\n",
    )
    .unwrap();
    assert_eq!(models::load_file(&jsonl).unwrap().models.len(), 2);

    let bad = |name: &str, text: &str, needle: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let err = format!("{:#}", models::load_file(&p).unwrap_err());
        assert!(err.contains(name) && err.contains(needle), "{err}");
    };
    bad("bad.jsonl", "{\"id\": \"a\"}\n{\"id\": \n", ":2:");
    bad("bad.json", "[{\"id\": \"a\"},\n {\"id\": ]", "line 2 column");
    bad("bad.csv", "model_id,downloads\na,1\nb,lots\n", "line 3");
    bad("cols.csv", "name,count\na,1\n", "no model_id column");
    bad("ragged.csv", "model_id,downloads\na,1,2\n", "line 2");
    bad("noid.json", "[{\"downloads\": 1}]", "entry 1");
}

#[test]
fn embedded_snapshot_runs_offline() {
    let list = models::embedded().top(5000);
    let tpu = Registry::builtin("torchtpu-0.2.0").unwrap();
    let r = sweep(&list, Profiles::embedded(), &tpu, None, &Options::default());
    assert_eq!(r.totals.total.models, 5000);
    assert!(r.source.attribution.contains("llmfit-core 1.1.18") && r.source.attribution.contains("MIT"));
    assert!(r.source.captured.as_deref().unwrap().contains("2026-10-12"));
    // GGUF/MLX repos are recognised from their ids.
    assert!(r.totals.not_applicable.models > 300);
    assert!(r.models.iter().any(|m| m.id == "unsloth/Qwen3-4B-GGUF" && m.result.verdict == Verdict::NotApplicable));
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/models/README.md").is_file());
}

/// A profile dir with one complete, one inference-only and one incomplete type, plus `extra`
/// (bf16 or per-config variants), and a list with one model per type.
mod partial {
    use super::*;
    use serde_json::json;

    pub fn profile(id: &str, status: &str, coverage: serde_json::Value, ops: &[&str]) -> serde_json::Value {
        let (library, name) = id.split_once('/').unwrap();
        json!({
            "schema": 1, "id": id, "library": library, "name": name, "status": status, "method": "tiny/cpu",
            "classes": coverage.as_object().unwrap().keys().collect::<Vec<_>>(),
            "versions": {"torch": "2.15.0", "tracer": "0.3.0", "transformers": "5.24.0"},
            "coverage": coverage,
            "ops": ops.iter().map(|op| json!({"op": op, "count": 1, "dtypes": ["float32"],
                                               "phases": ["backward", "forward", "inference"]})).collect::<Vec<_>>(),
        })
    }

    pub fn phases(inference: &str, forward: &str, backward: &str) -> serde_json::Value {
        json!({"inference": inference, "forward": forward, "backward": backward})
    }

    pub fn write(dir: &Path, profiles: &[serde_json::Value]) {
        for p in profiles {
            let path = dir.join(format!("{}.json", p["id"].as_str().unwrap()));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, serde_json::to_string_pretty(p).unwrap()).unwrap();
        }
    }

    pub fn corpus(dir: &Path) -> Profiles {
        let ok = phases("ok", "ok", "ok");
        write(
            dir,
            &[
                profile("transformers/full", "ok", json!({"FullModel": ok, "FullForCausalLM": ok}), &["aten::mm"]),
                profile(
                    "transformers/notrain",
                    "partial",
                    json!({"NotrainModel": ok, "NotrainForMaskedLM": phases("ok", "ok", "failed")}),
                    &["aten::mm"],
                ),
                profile(
                    "transformers/nohead",
                    "partial",
                    json!({"NoheadModel": ok, "NoheadForObjectDetection": phases("failed", "not_run", "not_run")}),
                    &["aten::mm"],
                ),
                // Missing ops are a fact whatever the coverage: this one fails.
                profile(
                    "transformers/gap",
                    "partial",
                    json!({"GapModel": phases("ok", "ok", "failed")}),
                    &["aten::mm", "aten::_weight_norm_interface_backward"],
                ),
            ],
        );
        Profiles::from_dir(dir).unwrap()
    }

    pub fn list() -> ModelList {
        let m = |id: &str, mt: &str, downloads: u64| ModelRecord {
            id: id.into(),
            downloads,
            model_type: Some(mt.into()),
            library_name: Some("transformers".into()),
            tags: Some(vec!["safetensors".into()]),
            ..Default::default()
        };
        let mut list = models::load_file(&fixtures().join("models.json")).unwrap().top(0);
        list.models = vec![
            m("a/full", "full", 40),
            m("a/notrain", "notrain", 30),
            m("a/nohead", "nohead", 20),
            m("a/gap", "gap", 10),
        ];
        list
    }
}

#[test]
fn partial_profiles_never_pass_in_any_format() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = partial::corpus(dir.path());
    let tpu = Registry::builtin("torchtpu-0.2.0").unwrap();
    let r = sweep(&partial::list(), &profiles, &tpu, None, &Options::default());
    let v = |id: &str| model(&r, id).result.verdict;
    assert_eq!(v("a/full"), Verdict::Pass);
    assert_eq!(v("a/notrain"), Verdict::PassInference);
    assert_eq!(v("a/nohead"), Verdict::Incomplete);
    assert_eq!(v("a/gap"), Verdict::Fail);
    let t = &r.totals;
    assert_eq!(
        (t.pass.models, t.pass_inference.models, t.incomplete.models, t.fail.models),
        (1, 1, 1, 1),
        "each verdict has its own total"
    );
    assert_eq!(t.pass_rate.by_count, 25.0, "only pass counts towards the pass rate");
    assert_eq!(t.inference_rate.by_count, 50.0, "pass + pass-inference (gap's inference is not proven)");
    assert!(!model(&r, "a/gap").result.inference_ok, "its missing op is recorded at inference");
    // The greedy plan does not promise a pass it cannot prove: implementing the missing op
    // leaves a/gap inference-only, so nothing flips.
    assert!(r.plan.steps.iter().all(|s| s.flipped.models == 0), "{:?}", r.plan.steps);

    // Confidence notes name the classes and phases that were not traced, and the versions.
    let nohead = &model(&r, "a/nohead").result.confidence[0];
    assert!(
        nohead.starts_with("transformers/nohead: 1/2 classes fully traced (NoheadForObjectDetection: inference failed"),
        "{nohead}"
    );
    assert!(nohead.contains("tiny default config, real tensors; float32; torch 2.15.0, tracer 0.3.0"), "{nohead}");

    for format in [Format::Text, Format::Md, Format::Html, Format::Csv, Format::Json] {
        let out = report::render(&r, format);
        for label in ["pass-inference", "incomplete"] {
            assert!(out.contains(label), "{format:?} lacks {label}");
        }
    }
    let csv = report::render(&r, Format::Csv);
    let row = csv.lines().find(|l| l.contains("a/nohead")).unwrap();
    assert!(row.contains(",incomplete,") && row.contains("NoheadForObjectDetection: inference failed"), "{row}");
    // JSON keeps per-class, per-phase coverage for every profile used.
    let json: serde_json::Value = serde_json::from_str(&report::render(&r, Format::Json)).unwrap();
    let cov = &json["profiles"]["transformers/notrain"]["evaluation"]["coverage"];
    assert_eq!(cov["completeness"], "inference-only");
    assert_eq!(cov["classes"]["NotrainForMaskedLM"]["backward"], "failed");
    assert_eq!(json["models"][2]["coverage"], "incomplete");
    assert_eq!(json["totals"]["pass_inference"]["models"], 1);
    assert!(json["verdicts"].as_array().unwrap().iter().any(|l| l["verdict"] == "pass-inference"));
}

#[test]
fn bf16_verdicts_come_from_bf16_profiles_only() {
    use serde_json::json;
    let (f32_dir, bf16_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let profiles = partial::corpus(f32_dir.path());
    let ok = partial::phases("ok", "ok", "ok");
    // full needs an op in bf16 that TorchTPU lacks; notrain has no bf16 profile at all.
    partial::write(
        bf16_dir.path(),
        &[partial::profile(
            "transformers/full",
            "ok",
            json!({"FullModel": ok, "FullForCausalLM": ok}),
            &["aten::mm", "aten::_weight_norm_interface_backward"],
        )],
    );
    let bf16 = Profiles::from_dir(bf16_dir.path()).unwrap();
    let tpu = Registry::builtin("torchtpu-0.2.0").unwrap();
    let corpus = xla2tpu::sweep::Corpus { f32: &profiles, bf16: Some(&bf16), exact: None, executions: None };
    let r = sweep(&partial::list(), corpus, &tpu, None, &Options::default());
    let full = model(&r, "a/full");
    assert_eq!(full.result.verdict, Verdict::Pass);
    assert_eq!(full.bf16.as_ref().unwrap().verdict, Verdict::Fail, "passes in float32, not in bf16");
    let notrain = model(&r, "a/notrain").bf16.as_ref().unwrap();
    assert_eq!(notrain.verdict, Verdict::Unknown);
    assert_eq!(notrain.reason.as_deref(), Some("no bf16-autocast profile transformers/notrain"));
    let totals = &r.bf16.as_ref().unwrap().totals;
    assert_eq!((totals.pass.models, totals.fail.models, totals.unknown.models), (0, 1, 3));
    let csv = report::render(&r, Format::Csv);
    assert!(csv.lines().next().unwrap().ends_with("verdict_bf16,missing_ops_bf16"));
    assert!(report::render(&r, Format::Text).contains("bf16 under TorchTPU autocast: pass rate 0.0% by count"));
}

#[test]
fn exact_profiles_replace_type_profiles_and_say_so() {
    use serde_json::json;
    let (f32_dir, exact_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let profiles = partial::corpus(f32_dir.path());
    let ok = partial::phases("ok", "ok", "ok");
    // a/nohead's own config traces completely: its verdict becomes pass, from the exact profile.
    partial::write(
        &exact_dir.path().join("profiles"),
        &[partial::profile("config/abc123", "ok", json!({"NoheadForObjectDetection": ok}), &["aten::mm"])],
    );
    std::fs::write(
        exact_dir.path().join("index.json"),
        json!({"schema": 1, "models": {
            "a/nohead": {"config": "abc123", "status": "ok"},
            "a/full": {"config": "def456", "status": "error", "reason": "boom"}}})
        .to_string(),
    )
    .unwrap();
    let exact = xla2tpu::sweep::exact::Exact::load(exact_dir.path()).unwrap();
    let tpu = Registry::builtin("torchtpu-0.2.0").unwrap();
    let corpus = xla2tpu::sweep::Corpus { f32: &profiles, bf16: None, exact: Some(&exact), executions: None };
    let r = sweep(&partial::list(), corpus, &tpu, None, &Options::default());
    let nohead = model(&r, "a/nohead");
    assert!(nohead.exact);
    assert_eq!(nohead.profiles, ["config/abc123"]);
    assert_eq!(nohead.result.verdict, Verdict::Pass);
    assert_eq!(nohead.arch, "transformers/nohead", "grouped with its type");
    let full = model(&r, "a/full");
    assert!(!full.exact, "a failed per-config trace keeps the type-level verdict");
    assert_eq!(r.exact.as_ref().unwrap().models.models, 1);
    assert!(r.profiles.contains_key("config/abc123"));
    assert!(report::render(&r, Format::Text).contains("--exact: 1 model"));
    assert!(report::render(&r, Format::Md).contains("| pass (exact) |"));
}

#[test]
fn a_profile_that_skipped_the_image_is_partial_in_both_verdicts_and_every_format() {
    use serde_json::json;
    use xla2tpu::ops::execution::{ExecStatus, Executions};
    let (dir, exec_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ok = partial::phases("ok", "ok", "ok");
    // vlm traced every class and phase, on the text path only (as gemma3's profile did).
    let mut vlm = partial::profile("transformers/vlm", "ok", json!({"VlmForConditionalGeneration": ok}), &["aten::mm"]);
    vlm["untraced_inputs"] = json!(["image", "video"]);
    partial::write(
        dir.path(),
        &[partial::profile("transformers/full", "ok", json!({"FullForCausalLM": ok}), &["aten::mm"]), vlm],
    );
    for name in ["full", "vlm"] {
        let path = exec_dir.path().join("transformers").join(format!("{name}.json"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let exec = json!({"schema": 1, "id": format!("transformers/{name}"), "library": "transformers", "name": name,
            "precisions": {"float32": {"status": "pass"}, "bf16-autocast": {"status": "pass"}}});
        std::fs::write(path, exec.to_string()).unwrap();
    }
    let profiles = Profiles::from_dir(dir.path()).unwrap();
    let executions = Executions::from_dir(exec_dir.path()).unwrap();
    let mut list = partial::list();
    list.models.truncate(1);
    list.models.push(ModelRecord { id: "a/vlm".into(), model_type: Some("vlm".into()), ..list.models[0].clone() });
    let tpu = Registry::builtin("torchtpu-0.2.0").unwrap();
    let corpus = xla2tpu::sweep::Corpus { f32: &profiles, bf16: None, exact: None, executions: Some(&executions) };
    let r = sweep(&list, corpus, &tpu, None, &Options::default());

    let vlm = model(&r, "a/vlm");
    assert_eq!(vlm.result.verdict, Verdict::Partial, "no op is missing, but the image was never fed");
    assert_eq!(vlm.result.reason.as_deref(), Some("image and video paths not traced"));
    assert!(!vlm.result.inference_ok, "the vision tower's inference is not proven");
    let run = vlm.execution.as_ref().unwrap();
    assert_eq!((run.status, run.reason.as_deref()), (ExecStatus::Partial, Some("image and video paths not traced")));
    assert_eq!(model(&r, "a/full").result.verdict, Verdict::Pass);
    assert_eq!((r.totals.pass.models, r.totals.partial.models), (1, 1));
    let x = r.execution.as_ref().unwrap();
    assert_eq!((x.totals[&ExecStatus::Pass].models, x.totals[&ExecStatus::Partial].models), (1, 1));
    assert_eq!(x.both_rate.by_count, 50.0, "a partial model does not run 'both'");

    for format in [Format::Text, Format::Md, Format::Html, Format::Csv, Format::Json] {
        let out = report::render(&r, format);
        assert!(out.contains("partial"), "{format:?} lacks the verdict");
        assert!(out.contains("image and video paths not traced"), "{format:?} lacks the cause");
    }
    let csv = report::render(&r, Format::Csv);
    let row = csv.lines().find(|l| l.contains("a/vlm")).unwrap();
    assert!(row.contains(",partial,") && row.ends_with(",partial,image and video paths not traced,,partial"), "{row}");
    let json: serde_json::Value = serde_json::from_str(&report::render(&r, Format::Json)).unwrap();
    assert_eq!(json["models"][1]["untraced_inputs"], json!(["image", "video"]));
    assert_eq!(json["models"][1]["execution"]["status"], "partial");
}
