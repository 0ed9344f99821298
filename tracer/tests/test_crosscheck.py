"""The profiler-based crosscheck agrees with the dispatch-mode recorder on hand-built modules."""

import torch

from xla2tpu_tracer import crosscheck
from xla2tpu_tracer.phases import run_phases
from xla2tpu_tracer.recorder import OpRecorder, ops_to_json


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 8)
        self.lin = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, ids):
        h = self.emb(ids)  # composite-explicit: index_select inside is not top-level
        h = self.norm(self.lin(h))  # linear -> t + addmm; layer_norm -> native_layer_norm
        h = h.reshape(h.shape[0], -1)  # reshape -> view (dispatch mode) / _reshape_alias (profiler)
        h = h + h[:, :1] * 2  # h used twice: gradient accumulation in the engine
        return torch.softmax(h, -1).sum()


def _trace(recorder):
    torch.manual_seed(0)
    model = Net()
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    run_phases(model, lambda m, training: m(ids), recorder)
    ops, _, _ = ops_to_json(recorder.stats)
    return ops


def _as_files(rec_ops, prof_ops):
    prof = {"ops": rec_ops}
    cross = {"ops": [{"op": o["op"], "phases": o["phases"], **({"neutral": o["neutral"]} if "neutral" in o else {}),
                      **({"candidates": sorted(c[1:] for c in o.get("inner", []) if c[0] == "?")}
                         if any(c[0] == "?" for c in o.get("inner", [])) else {}),
                      **({"equivalent": sorted(c[1:] for c in o.get("inner", []) if c[0] == "=")}
                         if any(c[0] == "=" for c in o.get("inner", [])) else {})}
                     for o in prof_ops]}
    return prof, cross


def test_profiler_method_agrees_with_recorder():
    crosscheck.warm_up()
    rec_ops = _trace(OpRecorder())
    prof_ops = _trace(crosscheck.ProfilerRecorder())
    seen = {o["op"]: set(o["phases"]) for o in prof_ops}
    # The normalised profiler view is the post-CompositeImplicit, top-level op set.
    assert "aten::t" in seen and "aten::addmm" in seen and "aten::linear" not in seen
    assert "aten::native_layer_norm" in seen and "aten::layer_norm" not in seen
    assert "aten::embedding" in seen and "aten::index_select" not in seen
    assert "aten::_softmax" in seen and "aten::softmax.int" not in seen
    assert seen["aten::native_layer_norm_backward"] == {"backward"}
    assert seen["aten::addmm"] == {"inference", "forward"}
    # torch.tensor's internal empty/to/detach_ never reach the dispatch mode: dropped.
    assert "aten::detach_" not in seen
    prof, cross = _as_files(rec_ops, prof_ops)
    matched, total, missed = crosscheck.compare(prof, cross)
    assert missed == [] and matched == total > 10


def test_compare_reports_an_op_the_profile_lacks():
    prof = {"ops": [{"op": "aten::addmm"}, {"op": "aten::_scaled_dot_product_flash_attention_for_cpu",
                                             "neutral": "sdpa"}, {"op": "prim::device"}]}
    cross = {"ops": [{"op": "aten::addmm"}, {"op": "aten::_scaled_dot_product_flash_attention_for_cpu",
                                             "neutral": "sdpa"},
                     {"op": "aten::nonzero"}, {"op": "aten::min", "candidates": ["aten::min.dim", "aten::min.other"]}]}
    matched, total, missed = crosscheck.compare(prof, cross)
    assert (matched, total) == (2, 4)
    assert missed == ["aten::nonzero", "aten::min"]


def test_overload_resolution_from_recorded_inputs():
    assert crosscheck.resolve("aten::add", ["float", "float", "Scalar"]) == ["aten::add.Tensor"]
    assert crosscheck.resolve("aten::add", ["float", "Scalar", "Scalar"]) == ["aten::add.Scalar"]
    # the out= variant of min(Tensor, Tensor) is not a candidate when min.other fits
    assert crosscheck.resolve("aten::min", ["float", "float"]) == ["aten::min.other"]
    assert crosscheck.decomposed("aten::linear") and not crosscheck.decomposed("aten::addmm")
