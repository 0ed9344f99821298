"""Registry fidelity: TorchTPU's kernels are registered, everything else is
refused with TorchTPU's error and recorded with the calling user frame."""

import os

import pytest
import torch

from xla2tpu_emulator import config
from xla2tpu_emulator import kernels
from xla2tpu_emulator import registry

from conftest import REPO

MISSING = "'{}' is not implemented for TPU. Please file a feature request"


def test_the_registry_is_the_one_ops_check_reads(monkeypatch):
  monkeypatch.delenv("XLA2TPU_EMULATOR_REGISTRY", raising=False)
  monkeypatch.delenv("XLA2TPU_EMULATOR_AUTOCAST", raising=False)
  rules = os.path.join(REPO, "rules", "backends")
  assert os.path.samefile(config.registry_path(), os.path.join(rules, "torchtpu-0.2.0.tsv"))
  assert os.path.samefile(config.autocast_path(), os.path.join(rules, "torchtpu-0.2.0.autocast.txt"))


def test_every_tpu_kernel_op_has_a_direct_registration():
  ops = [o for o in registry.tpu_kernel_ops() if o.startswith("aten::")]
  assert len(ops) > 600
  problems = {
      o: kernels.registered.get(o)
      for o in ops
      if str(kernels.registered.get(o)).split("+")[0]
      not in ("generic", "view", "special", "absent")
  }
  assert not problems
  regs = set(torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))  # pylint: disable=protected-access
  for o in ops:
    if kernels.registered[o] != "absent":
      assert o in regs, o
  # composites are not registered: they decompose as on TorchTPU
  assert "aten::add.Tensor" not in regs
  assert "aten::median" not in regs


def _site_of(events, op):
  ev = [e for e in events if e["event"] == "incompatibility" and e["op"] == op]
  assert ev, events
  return ev[-1]


def test_missing_ops_refused_with_torchtpu_text(capture_report):
  t = torch.randn(8, device="tpu")
  with pytest.raises(NotImplementedError) as e:
    torch.median(t)  # refuse-median
  assert str(e.value) == MISSING.format("aten::median")
  with pytest.raises(NotImplementedError) as e:
    torch.nansum(t)
  assert str(e.value) == MISSING.format("aten::nansum")
  with pytest.raises(NotImplementedError) as e:
    torch.special.erfc(t)  # composite whose structured delegate is missing
  assert str(e.value) == MISSING.format("aten::erfc.out")
  ev = _site_of(capture_report(), "aten::median")
  assert ev["kind"] == "missing_op"
  assert ev["file"] == os.path.abspath(__file__)
  assert ev["function"] == "test_missing_ops_refused_with_torchtpu_text"
  with open(__file__, encoding="utf-8") as f:
    line = next(i for i, l in enumerate(f, 1) if "refuse-median" in l and "torch.median" in l)
  assert ev["line"] == line
  assert ev["stack"][0]["line"] == line
  assert _site_of(capture_report(), "aten::erfc.out")["message"] == MISSING.format("aten::erfc.out")


def _model_forward(x):
  return torch.median(x)  # model-frame


def test_event_names_model_frame_and_caller(capture_report):
  with pytest.raises(NotImplementedError):
    _model_forward(torch.ones(3, device="tpu"))
  ev = _site_of(capture_report(), "aten::median")
  assert ev["function"] == "_model_forward"
  assert ev["stack"][1]["function"] == "test_event_names_model_frame_and_caller"
  assert len(ev["stack"]) <= 8


def test_unknown_op_runs_on_cpu_with_warning(capture_report):
  lib = torch.library.Library("xla2tpu_test", "DEF")  # noqa: TOR901
  lib.define("twice(Tensor x) -> Tensor")
  lib.impl("twice", lambda x: x * 2, "CPU")
  out = torch.ops.xla2tpu_test.twice(torch.ones(2, device="tpu"))
  assert out.device.type == "tpu"
  assert out.cpu().tolist() == [2.0, 2.0]
  warns = [e for e in capture_report() if e["event"] == "warning"]
  assert any(w["kind"] == "unknown_op" and "xla2tpu_test::twice" in w["message"] for w in warns)


def test_cpu_fallback_switch():
  kernels.cpu_fallback_enabled = True
  try:
    assert torch.median(torch.tensor([3.0, 1.0, 2.0], device="tpu")).item() == 2.0
  finally:
    kernels.cpu_fallback_enabled = False


def test_autocast_registrations_cover_the_list():
  from xla2tpu_emulator import autocast  # pylint: disable=import-outside-toplevel

  listed = set(registry.autocast_ops())
  assert len(listed) == 135
  present = set(autocast.registered)
  assert present <= listed
  assert len(present) >= 130
  assert autocast.registered["aten::mm"] == "lower"
  assert autocast.registered["aten::mse_loss"] == "fp32"
