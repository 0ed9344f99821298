"""API -> ATen op table (``python -m xla2tpu_tracer api``). Need tracer/.venv (torch 2.15.0):

    tracer/.venv/bin/python -m pytest tracer/tests -q
"""

import glob
import os

import pytest
import torch
import torch.nn.functional as F

from xla2tpu_tracer import api_ops
from xla2tpu_tracer.api_ops import Api, record_call, variant

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE_DIR = os.path.join(ROOT, "rules", "api")


def _fn(name, obj):
    return Api(name, name.rsplit(".", 1)[0], obj, "function")


def _ops(res, phase):
    return set(res[phase])


def test_median_variants_dispatch_different_ops():
    api = _fn("torch.median", torch.median)
    x = torch.randn(3, 4, requires_grad=True)
    assert variant(api, (x,), {}) == "input"
    assert variant(api, (x, 1), {}) == "input,dim"
    assert variant(api, (x,), {"dim": 1, "keepdim": True}) == "input,dim=,keepdim="
    whole, _ = record_call(torch.median, (x,), {})
    by_dim, _ = record_call(torch.median, (x, 1), {})
    assert "aten::median" in _ops(whole, "forward") and "aten::median.dim" not in _ops(whole, "forward")
    assert "aten::median.dim" in _ops(by_dim, "forward")
    assert "backward" in whole and "backward" in by_dim


def test_method_variant_starts_with_self_and_overloads_are_told_apart():
    api = Api("torch.Tensor.max", "torch.Tensor", torch.Tensor.max, "method")
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    assert variant(api, (x, 0), {}) == "self,dim"
    assert variant(api, (x, y), {}) == "self,other"
    assert variant(api, (x,), {"dim": 0, "keepdim": True}) == "self,dim=,keepdim="


def test_string_choices_are_part_of_the_variant():
    api = _fn("torch.nn.functional.interpolate", F.interpolate)
    x = torch.randn(1, 1, 2, 2)
    assert variant(api, (x,), {"scale_factor": 2, "mode": "bilinear"}) == "input,mode=bilinear,scale_factor="
    assert variant(_fn("torch.einsum", torch.einsum), ("ij,jk->ik", x, x), {}) == "equation,*operands"


def test_mish_forward_and_backward_are_recorded_separately():
    x = torch.randn(4, requires_grad=True)
    res, note = record_call(F.mish, (x,), {})
    assert note is None
    assert _ops(res, "forward") == {"aten::mish"}
    assert _ops(res, "backward") == {"aten::mish_backward"}


def test_nansum_and_mean():
    x = torch.randn(3, 4, requires_grad=True)
    res, _ = record_call(torch.nansum, (x,), {})
    assert "aten::nansum" in _ops(res, "forward")
    res, _ = record_call(torch.mean, (x,), {})
    assert _ops(res, "forward") == {"aten::mean"}
    res, _ = record_call(torch.mean, (x,), {"dim": 1})
    assert _ops(res, "forward") == {"aten::mean.dim"}


def test_no_backward_without_grad_and_inplace_runs_on_a_clone():
    x = torch.randn(3)
    res, _ = record_call(torch.abs, (x,), {})
    assert "backward" not in res
    before = x.clone()
    res, _ = record_call(torch.Tensor.abs_, (x,), {}, inplace=True, grad=False)
    assert "aten::abs_" in _ops(res, "forward")
    assert torch.equal(x, before)


def test_generate_end_to_end(tmp_path):
    out = tmp_path / "torch-test.tsv"
    res = api_ops.generate(str(out), workers=1, max_samples=1,
                           only=["torch.median", "torch.nn.functional.mish", "torch.nansum", "torch.nn.Mish",
                                 "torch.Tensor.cuda"])
    assert not res["job_failures"]
    lines = out.read_text().splitlines()
    assert lines[0] == f"# format: {api_ops.FORMAT}"
    body = [ln for ln in lines if not ln.startswith("#")]
    assert body[0].split("\t") == list(api_ops.HEADER)
    rows = [ln.split("\t") for ln in body[1:]]
    assert all(len(r) == len(api_ops.HEADER) for r in rows)
    keys = [(r[0], r[1], api_ops.PHASES.index(r[2])) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    got = {(r[0], r[1], r[2]): r[3].split(",") for r in rows}
    assert "aten::median" in got[("torch.median", "input", "forward")]
    assert "aten::median.dim" in got[("torch.median", "input,dim=,keepdim=", "forward")]
    assert got[("torch.nn.functional.mish", "input", "forward")] == ["aten::mish"]
    assert got[("torch.nn.functional.mish", "input", "backward")] == ["aten::mish_backward"]
    assert got[("torch.nn.Mish", "()", "backward")] == ["aten::mish_backward"]
    assert "aten::nansum" in got[("torch.nansum", "input", "forward")]
    skipped = (tmp_path / "torch-test.skipped.txt").read_text()
    assert "torch.Tensor.cuda\tskipped\t" in skipped


def _committed_tables():
    return sorted(p for p in glob.glob(os.path.join(TABLE_DIR, "torch-*.tsv")))


def test_committed_table_matches_the_venv_torch():
    version = torch.__version__.split("+")[0]
    path = os.path.join(TABLE_DIR, f"torch-{version}.tsv")
    assert os.path.exists(path), (
        f"no API table for the venv's torch {version} (have {_committed_tables()}); regenerate with "
        + api_ops.COMMAND.format(v=version))
    with open(path, encoding="utf-8") as f:
        head = [next(f) for _ in range(12)]
    assert head[0].strip() == f"# format: {api_ops.FORMAT}"
    assert f"# torch: {version}\n" in head
    assert any(h.startswith("# command: ") and f"torch-{version}.tsv" in h for h in head)


@pytest.mark.parametrize("api,var,op", [
    ("torch.median", "input", "aten::median"),
    ("torch.nansum", "input", "aten::nansum"),
    ("torch.trace", "input", "aten::trace"),
    ("torch.linalg.eig", "input", "aten::linalg_eig"),
    ("torch.nn.functional.mish", "input", "aten::mish"),
    ("torch.special.erfc", "input", "aten::erfc"),
])
def test_committed_table_has_known_rows(api, var, op):
    version = torch.__version__.split("+")[0]
    path = os.path.join(TABLE_DIR, f"torch-{version}.tsv")
    if not os.path.exists(path):
        pytest.skip("no committed table for this torch")
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[:3] == [api, var, "forward"]:
                assert op in cols[3].split(",")
                return
    raise AssertionError(f"{api} [{var}] forward not in {path}")
