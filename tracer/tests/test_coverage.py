"""Per-phase coverage: written by the tracer, rebuilt by reindex for older profiles."""

from xla2tpu_tracer import output


def test_phase_coverage():
    assert output.phase_coverage(None) == {"inference": "ok", "forward": "ok", "backward": "ok"}
    assert output.phase_coverage("forward") == {"inference": "ok", "forward": "failed", "backward": "not_run"}
    assert output.phase_coverage("init") == {"inference": "failed", "forward": "not_run", "backward": "not_run"}


def test_derive_coverage_lists_classes_that_failed_before_recording():
    prof = {"library": "transformers", "name": "x", "classes": ["XForCausalLM"],
            "notes": ["XModel: init: TypeError: boom", "XForCausalLM: backward failed: RuntimeError: no",
                      "training loss: sum of float outputs", "XForCausalLM: image fed"]}
    cov = output.derive_coverage(prof)
    assert cov == {"XForCausalLM": output.phase_coverage("backward"), "XModel": output.phase_coverage("init")}
    assert not output.coverage_complete(cov)


def test_derive_coverage_timm_notes_have_no_class_prefix():
    prof = {"library": "timm", "name": "vit", "classes": ["vit_tiny"], "notes": ["forward failed: RuntimeError: x"]}
    assert output.derive_coverage(prof) == {"vit_tiny": output.phase_coverage("forward")}
    ok = {"library": "timm", "name": "vit", "classes": ["vit_tiny"], "notes": []}
    assert output.coverage_complete(output.derive_coverage(ok))


def test_normalize_adds_coverage_and_precision_once():
    prof = {"library": "diffusers", "name": "U", "classes": ["U"], "notes": [], "ops": [],
            "versions": {}, "status": "ok"}
    out = output.normalize_profile(prof)
    assert out["precision"] == "float32" and output.coverage_complete(out["coverage"])
    kept = output.normalize_profile(dict(out, precision="bf16-autocast"))
    assert kept["precision"] == "bf16-autocast"
