//! Evaluator rules on a hand-made registry and profiles: one test per rule in src/ops/eval.rs.
use std::path::Path;

use serde_json::json;
use xla2tpu::ops::{Evaluation, NeutralMap, Profile, Profiles, Registry, evaluate};

const TSV: &str = "\
# format: xla2tpu-backend/1
# backend: test-1
# fallback: no test kernel
# source: inline test registry
op\tclass\teffective\tstructured_delegate
aten::relu\ttest_kernel\ttest_kernel\t
aten::mm\tcomposite_explicit\tvia_delegate:test_kernel\taten::mm.out
aten::mm.out\ttest_kernel\ttest_kernel\t
aten::erfc\tcomposite_explicit\tvia_delegate:missing_fallback\taten::erfc.out
aten::erfc.out\tmissing_fallback\tmissing_fallback\t
aten::embedding\tcomposite_explicit\tcomposite_explicit\t
aten::index_select\ttest_kernel\ttest_kernel\t
aten::outer\tcomposite_explicit\tcomposite_explicit\t
aten::median\tmissing_fallback\tmissing_fallback\t
aten::native_batch_norm\tcomposite_implicit\tcomposite_implicit\t
aten::fused_attn\ttest_kernel\ttest_kernel\t
aten::fused_attn_backward\tmissing_fallback\tmissing_fallback\t
aten::_scaled_dot_product_flash_attention_for_cpu\tmissing_fallback\tmissing_fallback\t
";

const NEUTRAL: &str = "
format: xla2tpu-neutral/1
requirements:
  sdpa: {ops: [aten::fused_attn], why: test}
  sdpa_backward: {ops: [aten::fused_attn_backward], why: test, note: not observed}
  convolution_backward: {ops: [aten::relu], why: test}
own_backward:
  aten::median_backward: aten::median
";

fn registry() -> Registry {
    Registry::parse("fallback-name", TSV, NeutralMap::parse(NEUTRAL).unwrap()).unwrap()
}

/// A profile with the given op records (JSON objects; `phases` defaults to inference).
fn profile(ops: serde_json::Value) -> Profile {
    let mut ops = ops;
    for op in ops.as_array_mut().unwrap() {
        op.as_object_mut().unwrap().entry("phases").or_insert(json!(["forward", "inference"]));
    }
    serde_json::from_value(json!({"schema": 1, "id": "test/model", "status": "ok", "ops": ops})).unwrap()
}

fn eval(ops: serde_json::Value) -> Evaluation {
    evaluate(&registry(), &profile(ops))
}

fn only_missing(e: &Evaluation) -> (&str, &str) {
    assert_eq!(e.missing.len(), 1, "expected exactly one missing op: {e:#?}");
    (&e.missing[0].op, &e.missing[0].reason)
}

#[test]
fn header_lines_set_name_fallback_and_provenance() {
    let r = registry();
    assert_eq!(r.name(), "test-1");
    assert_eq!(r.provenance(), "source: inline test registry");
    assert_eq!(r.fallback_reason(), "no test kernel");
}

#[test]
fn unknown_format_is_rejected() {
    let tsv = TSV.replace("xla2tpu-backend/1", "xla2tpu-backend/9");
    let err = Registry::parse("x", &tsv, NeutralMap::default()).unwrap_err();
    assert!(err.to_string().contains("unsupported backend format"), "{err}");
}

#[test]
fn format_line_is_required() {
    let tsv = TSV.replace("# format: xla2tpu-backend/1\n", "");
    let err = Registry::parse("x", &tsv, NeutralMap::default()).unwrap_err();
    assert!(err.to_string().contains("missing `# format: xla2tpu-backend/1`"), "{err}");
}

#[test]
fn backend_kernel_is_supported() {
    let e = eval(json!([{"op": "aten::relu"}]));
    assert!(e.pass && e.inference_ok && e.notes.is_empty(), "{e:#?}");
}

#[test]
fn structured_delegate_with_kernel_is_supported() {
    let e = eval(json!([{"op": "aten::mm"}]));
    assert!(e.pass, "{e:#?}");
}

#[test]
fn structured_delegate_without_kernel_is_missing() {
    let e = eval(json!([{"op": "aten::erfc"}]));
    assert_eq!(only_missing(&e), ("aten::erfc", "structured delegate aten::erfc.out has no kernel"));
}

#[test]
fn composite_without_delegate_follows_its_inner_ops() {
    let ok = eval(json!([{"op": "aten::embedding", "inner": ["aten::index_select", "aten::mm"]}]));
    assert!(ok.pass && ok.notes.is_empty(), "{ok:#?}");

    let bad = eval(json!([{"op": "aten::embedding", "inner": ["aten::index_select", "aten::median"]}]));
    let (op, why) = only_missing(&bad);
    assert_eq!(op, "aten::embedding");
    assert!(why.contains("calls aten::median, without a kernel"), "{why}");
}

#[test]
fn composite_inner_recursion_uses_nested_inner_records() {
    // outer -> embedding -> median: the failure two levels down fails outer too.
    let e = eval(json!([
        {"op": "aten::outer", "inner": ["aten::embedding"]},
        {"op": "aten::embedding", "inner": ["aten::median"]},
    ]));
    let ops: Vec<&str> = e.missing.iter().map(|m| m.op.as_str()).collect();
    assert_eq!(ops, ["aten::embedding", "aten::outer"]);
}

#[test]
fn composite_inner_cycle_terminates() {
    let e = eval(json!([
        {"op": "aten::outer", "inner": ["aten::embedding"]},
        {"op": "aten::embedding", "inner": ["aten::outer", "aten::relu"]},
    ]));
    assert!(e.pass, "{e:#?}");
}

#[test]
fn composite_without_inner_is_supported_but_unverified() {
    let e = eval(json!([{"op": "aten::embedding"}]));
    assert!(e.pass, "{e:#?}");
    assert!(e.notes.iter().any(|n| n.contains("unverified") && n.contains("aten::embedding")), "{:?}", e.notes);
}

#[test]
fn composite_implicit_is_noted_not_failed() {
    let e = eval(json!([{"op": "aten::native_batch_norm"}]));
    assert!(e.pass, "{e:#?}");
    assert!(
        e.notes.iter().any(|n| n.contains("decomposition") && n.contains("aten::native_batch_norm")),
        "{:?}",
        e.notes
    );
}

#[test]
fn missing_fallback_is_missing_with_the_backend_reason() {
    let e = eval(json!([{"op": "aten::median"}]));
    assert_eq!(only_missing(&e), ("aten::median", "no test kernel"));
}

#[test]
fn torchtpu_fallback_reason_is_the_documented_one() {
    let r = Registry::builtin("torchtpu-0.2.0").unwrap();
    assert_eq!(
        r.fallback_reason(),
        "no TorchTPU kernel; TpuMissingOpFallback raises 'not implemented for TPU' (CPU fallback only with the internal switch)"
    );
}

#[test]
fn non_aten_ops_outside_the_registry_are_ignored_with_a_note() {
    let e = eval(json!([{"op": "prim::device"}]));
    assert!(e.pass, "{e:#?}");
    assert!(e.notes.iter().any(|n| n.contains("ignored") && n.contains("prim::device")), "{:?}", e.notes);
}

#[test]
fn unknown_aten_op_is_missing() {
    let e = eval(json!([{"op": "aten::brand_new_op"}]));
    assert_eq!(only_missing(&e), ("aten::brand_new_op", "unknown to this registry"));
}

#[test]
fn neutral_requirement_resolves_through_the_backend() {
    // The CPU kernel itself is missing_fallback here; the resolution (fused_attn) has a kernel.
    let e = eval(json!([{"op": "aten::_scaled_dot_product_flash_attention_for_cpu", "neutral": "sdpa"}]));
    assert!(e.pass, "{e:#?}");
    assert!(e.notes.iter().any(|n| n.contains("'sdpa'") && n.contains("aten::fused_attn")), "{:?}", e.notes);
}

#[test]
fn neutral_requirement_missing_on_the_backend_is_reported_with_its_note() {
    let e = eval(
        json!([{"op": "aten::_scaled_dot_product_flash_attention_for_cpu_backward", "neutral": "sdpa_backward", "phases": ["backward"]}]),
    );
    let (op, why) = only_missing(&e);
    assert_eq!(op, "aten::_scaled_dot_product_flash_attention_for_cpu_backward");
    assert!(why.contains("'sdpa_backward'") && why.contains("aten::fused_attn_backward: no test kernel"), "{why}");
    assert!(e.notes.iter().any(|n| n.contains("not observed")), "{:?}", e.notes);
}

#[test]
fn neutral_tags_also_apply_to_inner_ops() {
    // outer's default kernel called the CPU flash kernel; on this backend that is fused_attn.
    let e = eval(json!([
        {"op": "aten::outer", "inner": ["aten::_scaled_dot_product_flash_attention_for_cpu"]},
        {"op": "aten::_scaled_dot_product_flash_attention_for_cpu", "neutral": "sdpa"},
    ]));
    assert!(e.pass, "{e:#?}");
}

#[test]
fn untagged_cpu_kernels_in_inner_lists_use_the_tracer_naming_table() {
    // The tracer tags records, not inner lists; _slow_conv2d_backward stands for convolution_backward.
    let e = eval(json!([{"op": "aten::outer", "inner": ["aten::_slow_conv2d_backward.output_mask"]}]));
    assert!(e.pass, "{e:#?}");
    assert!(e.notes.iter().any(|n| n.contains("'convolution_backward'")), "{:?}", e.notes);
    // Without a resolution on the backend the op stays what it is (unknown here).
    let e = eval(json!([{"op": "aten::outer", "inner": ["aten::_nnpack_spatial_convolution"]}]));
    assert!(!e.pass, "{e:#?}");
}

#[test]
fn cpu_requirement_follows_the_tracer_table() {
    use xla2tpu::ops::cpu_requirement;
    let cases = [
        ("aten::_scaled_dot_product_flash_attention_for_cpu", Some("sdpa")),
        ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", Some("sdpa_backward")),
        ("aten::_efficient_attention_backward", Some("sdpa_backward")),
        ("aten::mkldnn_rnn_layer", Some("rnn")),
        ("aten::mkldnn_rnn_layer_backward", Some("rnn_backward")),
        ("aten::mkldnn_convolution", Some("convolution")),
        ("aten::_dyn_quant_matmul_4bit", Some("weight_int4pack_mm")),
        ("aten::_convert_weight_to_int4pack_for_cpu", Some("convert_weight_to_int4pack")),
        ("aten::_jagged_thing_for_cpu.out", Some("jagged_thing")),
        ("aten::_slow_conv2d_backward.output_mask", Some("convolution_backward")),
        ("aten::slow_conv3d_forward", Some("convolution")),
        ("aten::addmm", None),
        ("prim::device", None),
    ];
    for (op, want) in cases {
        assert_eq!(cpu_requirement(op).as_deref(), want, "{op}");
    }
}

#[test]
fn unknown_neutral_requirement_falls_back_to_the_recorded_op() {
    let e = eval(json!([{"op": "aten::relu", "neutral": "something_new"}]));
    assert!(e.pass, "{e:#?}");
    assert!(e.notes.iter().any(|n| n.contains("no resolution") && n.contains("something_new")), "{:?}", e.notes);
}

#[test]
fn builtin_sdpa_resolutions_have_kernels() {
    let p = profile(json!([
        {"op": "aten::_scaled_dot_product_flash_attention_for_cpu", "neutral": "sdpa"},
        {"op": "aten::_scaled_dot_product_flash_attention_for_cpu_backward", "neutral": "sdpa_backward", "phases": ["backward"]},
        {"op": "aten::mkldnn_rnn_layer", "neutral": "rnn"},
        {"op": "aten::mkldnn_rnn_layer_backward", "neutral": "rnn_backward", "phases": ["backward"]},
    ]));
    for name in Registry::builtin_names() {
        let e = evaluate(&Registry::builtin(name).unwrap(), &p);
        assert!(e.pass, "{name}: {e:#?}");
    }
}

#[test]
fn backward_of_an_op_the_backend_differentiates_itself_is_not_required() {
    // median_backward is not in the registry at all; own_backward says it is never called.
    let e = eval(json!([{"op": "aten::median_backward", "phases": ["backward"]}]));
    assert!(e.pass, "{e:#?}");
    assert!(
        e.notes.iter().any(|n| n.contains("own autograd kernel") && n.contains("aten::median_backward")),
        "{:?}",
        e.notes
    );
}

#[test]
fn only_training_phases_missing_keeps_inference_ok() {
    let e = eval(json!([{"op": "aten::median", "phases": ["backward"]}]));
    assert!(!e.pass && e.inference_ok, "{e:#?}");
    assert_eq!(e.missing[0].phases, ["backward"]);

    let e = eval(json!([{"op": "aten::median", "phases": ["forward", "inference"]}]));
    assert!(!e.pass && !e.inference_ok, "{e:#?}");
}

#[test]
fn warnings_cover_host_syncs_dynamic_shapes_float64_and_partial_status() {
    let mut p =
        profile(json!([{"op": "aten::relu", "dtypes": ["float64"]}, {"op": "aten::mm", "dtypes": ["float32"]}]));
    p.host_syncs = vec!["aten::_local_scalar_dense".into()];
    p.dynamic_shape_ops = vec!["aten::nonzero".into()];
    p.status = "partial".into();
    let e = evaluate(&registry(), &p);
    assert!(e.pass);
    let w = e.warnings.join("\n");
    for needle in ["aten::_local_scalar_dense", "aten::nonzero", "float64 tensors in aten::relu (", "'partial'"] {
        assert!(w.contains(needle), "missing {needle:?} in:\n{w}");
    }
    assert!(!w.contains("aten::mm"), "float32-only op flagged:\n{w}");
}

#[test]
fn unknown_json_keys_are_tolerated() {
    let p: Profile = serde_json::from_value(json!({
        "schema": 1, "id": "x/y", "new_top_level": [1, 2],
        "ops": [{"op": "aten::relu", "count": 1, "shape_hint": "?", "phases": ["inference"]}]
    }))
    .unwrap();
    assert!(evaluate(&registry(), &p).pass);
}

fn fixture_corpus() -> Profiles {
    Profiles::from_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ops/corpus")).unwrap()
}

#[test]
fn profiles_from_dir_reads_profiles_and_index() {
    let p = fixture_corpus();
    assert!(p.load_errors().is_empty(), "{:?}", p.load_errors());
    assert_eq!(p.ids(), ["timm/broken", "transformers/good", "transformers/trainbad"]);
    assert_eq!(p.get("transformers/good").unwrap().versions["torch"], "2.15.0");
    let crash = p.failure("transformers/crashy").unwrap();
    assert_eq!((crash.status.as_str(), crash.reason.as_str()), ("crash", "killed: RSS > 6000 MB"));
    assert!(p.failure("transformers/good").is_none(), "ok entries are not failures");
    assert_eq!(p.failure("transformers/trainbad").unwrap().status, "partial");
}

#[test]
fn find_matches_names_case_and_dash_insensitively() {
    let p = fixture_corpus();
    assert_eq!(p.find("transformers/good").unwrap().id, "transformers/good");
    assert_eq!(p.find("GOOD").unwrap().id, "transformers/good");
    assert_eq!(p.find("train-bad").unwrap().id, "transformers/trainbad");
    assert!(p.find("nothing").is_none());
}

#[test]
fn registry_from_path_picks_up_the_sibling_neutral_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ops");
    let r = Registry::from_path(&dir.join("backends/mini-1.tsv")).unwrap();
    let p = fixture_corpus();
    let e = evaluate(&r, p.get("transformers/good").unwrap());
    assert!(e.pass, "{e:#?}");
}

#[test]
fn builtin_backends_load() {
    assert!(Registry::builtin_names().contains(&"torchtpu-0.2.0"));
    assert!(Registry::builtin_names().contains(&"torch_xla-2.9"));
    for name in Registry::builtin_names() {
        let r = Registry::builtin(name).unwrap();
        assert_eq!(r.name(), *name);
        assert!(!r.provenance().is_empty());
    }
    assert!(Registry::builtin("nope").is_err());
}

#[test]
fn evaluation_is_cheap() {
    // sweep evaluates thousands of models: one 200-op profile must stay far below a millisecond in release.
    let r = Registry::builtin("torchtpu-0.2.0").unwrap();
    let ops: Vec<_> = r.ops().take(200).map(|(op, _)| json!({"op": op})).collect();
    let p = profile(json!(ops));
    let start = std::time::Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(evaluate(&r, &p));
    }
    let per = start.elapsed() / 1000;
    // Generous bound: debug build on a shared 2-core machine (release is ~20x faster).
    assert!(per < std::time::Duration::from_millis(10), "{per:?} per evaluation");
}

#[test]
fn embedded_corpus_parses_and_bert_passes_on_torchtpu_if_present() {
    let p = Profiles::embedded();
    assert!(p.load_errors().is_empty(), "{:?}", p.load_errors());
    let Some(bert) = p.get("transformers/bert") else {
        eprintln!("SKIP: transformers/bert not embedded yet (corpus/ops is filled by the tracer)");
        return;
    };
    let e = evaluate(&Registry::builtin("torchtpu-0.2.0").unwrap(), bert);
    assert!(e.pass, "{e:#?}");
}
