"""Recorder checks on tiny hand-built modules. Need tracer/.venv (torch 2.15.0):

    tracer/.venv/bin/python -m pytest tracer/tests -q
"""

import json

import torch
import torch.nn.functional as F

from xla2tpu_tracer import output
from xla2tpu_tracer.phases import run_phases
from xla2tpu_tracer.recorder import OpRecorder, neutral_name, op_name, ops_to_json
from xla2tpu_tracer.target import Target


def _record(fn, phase="inference"):
    rec = OpRecorder()
    rec.phase = phase
    with rec:
        fn()
    ops, host, dyn = ops_to_json(rec.stats)
    return {o["op"]: o for o in ops}, host, dyn, rec


def test_op_name_uses_dispatcher_naming():
    assert op_name(torch.ops.aten.relu.default) == "aten::relu"
    assert op_name(torch.ops.aten.add.Tensor) == "aten::add.Tensor"


def test_linear_records_t_and_addmm():
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    ops, _, _, _ = _record(lambda: lin(x))
    assert "aten::t" in ops and "aten::addmm" in ops
    assert "aten::linear" not in ops  # CompositeImplicitAutograd: already decomposed
    assert ops["aten::addmm"]["dtypes"] == ["float32"]
    assert ops["aten::addmm"]["phases"] == ["inference"]


def test_embedding_records_inner_ops():
    emb = torch.nn.Embedding(10, 4)
    ids = torch.tensor([[1, 2, 3]])
    ops, _, _, _ = _record(lambda: emb(ids))
    e = ops["aten::embedding"]
    assert e["dtypes"] == ["float32", "int64"]
    assert "aten::index_select" in e["inner"]
    assert "inner" not in ops.get("aten::index_select", {})


def test_sdpa_gets_neutral_name():
    q = torch.randn(1, 2, 8, 16)
    ops, _, _, _ = _record(lambda: F.scaled_dot_product_attention(q, q, q))
    sdpa = [o for o in ops.values() if o["op"].startswith("aten::_scaled_dot_product")]
    assert sdpa and all(o["neutral"] == "sdpa" for o in sdpa)
    assert neutral_name("aten::_scaled_dot_product_flash_attention_for_cpu_backward") == "sdpa_backward"
    assert neutral_name("aten::mkldnn_rnn_layer") == "rnn"
    assert neutral_name("aten::mkldnn_rnn_layer_backward") == "rnn_backward"
    assert neutral_name("aten::addmm") is None


def test_phases_and_backward():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    x = torch.randn(3, 4)
    rec = OpRecorder()
    run_phases(model, lambda m, training: m(x), rec)
    ops, _, _ = ops_to_json(rec.stats)
    by = {o["op"]: o for o in ops}
    assert by["aten::addmm"]["phases"] == ["forward", "inference"]
    assert by["aten::threshold_backward"]["phases"] == ["backward"]


def test_host_sync_and_dynamic_shape_ops():
    x = torch.tensor([0.0, 1.0, 2.0])
    ops, host, dyn, rec = _record(lambda: (x.sum().item(), torch.nonzero(x), x[x > 0]))
    assert "aten::_local_scalar_dense" in host
    assert "aten::nonzero" in dyn
    assert "aten::index.Tensor" in rec.data_dependent


def test_json_is_sorted_and_stable():
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    rec = OpRecorder()
    run_phases(lin, lambda m, training: m(x), rec)
    ops, host, dyn = ops_to_json(rec.stats)
    res = {"status": "ok", "method": "tiny/cpu", "classes": ["B", "A"], "notes": [], "ops": list(reversed(ops)),
           "host_syncs": host, "dynamic_shape_ops": dyn}
    prof = output.make_profile(Target("transformers", "toy"), res, {"torch": "2.15.0", "python": "3.11.7"})
    text = output.dumps(prof)
    assert text.endswith("\n")
    assert text == output.dumps(json.loads(text))
    names = [o["op"] for o in prof["ops"]]
    assert names == sorted(names)
    assert prof["classes"] == ["A", "B"]
    keys = json.loads(text).keys()
    assert set(keys) == {"schema", "id", "library", "name", "classes", "status", "method", "versions", "notes",
                         "ops", "host_syncs", "dynamic_shape_ops", "coverage", "precision"}


def test_composite_implicit_ops_under_inference_mode_are_recorded_decomposed():
    """torch.inference_mode skips the Autograd keys, so aten::linear reaches the mode whole;
    the profile must still hold what it decomposes to, as outside inference mode."""
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    seen = {}
    for mode in ("no_grad", "inference_mode"):
        rec = OpRecorder()
        with getattr(torch, mode)(), rec:
            lin(x)
        seen[mode] = set(rec.stats)
    assert "aten::linear" not in seen["inference_mode"]
    assert seen["inference_mode"] == seen["no_grad"], seen


def test_an_op_with_a_cpu_kernel_and_a_composite_one_is_recorded_as_called():
    """silu_backward has a CPU kernel and a CompositeImplicitAutograd one; on CPU the kernel runs,
    so the backward records it, not its decomposition."""
    x = torch.randn(3, requires_grad=True)
    y = F.silu(x).sum()
    rec = OpRecorder()
    with rec:
        y.backward()
    assert "aten::silu_backward" in rec.stats and "aten::sigmoid" not in rec.stats, set(rec.stats)
