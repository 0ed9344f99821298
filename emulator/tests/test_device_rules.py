"""The emulator is never kinder than the chip: device rules and the audit of
places a CPU-backed emulation could be more forgiving (emulator/README.md,
"Strictness audit"). Each rule has the case that must fail and the
neighbouring case that must run."""

import os
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from device_rules.cases import CASES, outcome
from xla2tpu_emulator import devicecheck
from xla2tpu_emulator import report

DEVICE_MIX = (r"Expected all tensors to be on the same device|Input type \(.*\) and weight type"
              r"|Expected query, key, and value to have the same device type")


def _eval(source, dev):
  torch.manual_seed(0)
  x = torch.randn(2, 3, 8, 8).to(dev)
  return eval(source, {"torch": torch, "F": F, "x": x, "dev": dev})  # pylint: disable=eval-used


def _flat(r):
  return list(r) if isinstance(r, (tuple, list)) else [r]


def test_rules_come_from_torchs_native_functions_yaml():
  # Without the yaml every op would pass unchecked: that must fail here, not
  # pass quietly.
  assert devicecheck.native_functions_path() is not None
  assert devicecheck.rule("aten::mm") == devicecheck.EXACT
  assert devicecheck.rule("aten::embedding") == devicecheck.EXACT
  assert devicecheck.rule("aten::add.Tensor") == devicecheck.ITER
  assert devicecheck.rule("aten::_foreach_add_.List") == devicecheck.ITER
  assert devicecheck.rule("aten::copy_") == devicecheck.NONE
  assert devicecheck.rule("aten::_to_copy") == devicecheck.NONE


def test_parse_reads_nocheck_and_its_comment():
  lines = [
      "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n",
      "  device_check: NoCheck   # TensorIterator\n",
      "- func: view(Tensor(a) self, SymInt[] size) -> Tensor(a)\n",
      "  device_check: NoCheck\n",
      "- func: mm(Tensor self, Tensor mat2) -> Tensor\n",
      "  variants: function, method\n",
  ]
  assert devicecheck.parse(lines) == {
      "aten::add.Tensor": devicecheck.ITER,
      "aten::view": devicecheck.NONE,
  }


@pytest.mark.parametrize("name", sorted(CASES))
def test_device_rule(name, capture_report):
  source = CASES[name][0]
  if outcome(name, "emulator") == "raise":
    with pytest.raises(RuntimeError, match=DEVICE_MIX) as raised:
      _eval(source, "tpu")
    mixes = lambda: [e for e in capture_report()  # noqa: E731
                     if e["event"] == "incompatibility" and e["kind"] == "device_mismatch"]
    if mixes():
      # The emulator's check: blamed on the CPU-side argument.
      [mix] = mixes()
      assert mix["argument"], mix
      assert mix["message"] == str(raised.value)
    else:
      # torch's own check raised first (a structured op's TensorIterator
      # meta runs before any kernel); reported when it reaches the top.
      report.exception(RuntimeError, raised.value, raised.value.__traceback__)
      [mix] = mixes()
      assert "argument" not in mix
    assert mix["file"] == "<string>"  # the user's line: the eval'd case
    return
  got = _flat(_eval(source, "tpu"))
  want = _flat(_eval(source, "cpu"))
  on = "cpu" if name == "copy_to_cpu" else "tpu"
  for g, w in zip(got, want, strict=True):
    if isinstance(w, torch.Tensor):
      # No result lands on another device than a real kernel's.
      assert g.device.type == on, (name, g.device)
      torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5)
  assert not [e for e in capture_report() if e["event"] == "incompatibility"]


def test_device_mix_reported_at_user_line_with_argument(run_emulated):
  r = run_emulated("""
      import torch
      x = torch.randn(4, 8).to("tpu")
      emb = torch.nn.Embedding(10, 8)
      y = x * torch.tensor(2.0)          # 0-dim CPU tensor: a scalar, fine
      ids = torch.tensor([1, 2]).to("tpu")
      emb(ids)  # MIX
  """)
  assert r.returncode != 0
  mixes = r.all("incompatibility", "device_mismatch")
  assert len(mixes) == 1, r.stderr
  m = mixes[0]
  assert m["line"] == r.line_of("# MIX")
  assert m["op"] == "aten::embedding"
  assert m["argument"] == "weight"
  assert "Expected all tensors to be on the same device" in r.stderr
  [exc] = r.all("exception")
  assert exc["line"] == m["line"]


def test_device_mix_from_torchs_own_checks_is_reported(capture_report):
  # A device check inside torch (a TensorIterator meta) raises without the
  # emulator's help; the uncaught exception still reports a device mix-up.
  msg = "Expected all tensors to be on the same device, but found at least two devices, tpu:0 and cpu!"
  report.exception(RuntimeError, RuntimeError(msg), None)
  kinds = [e["kind"] for e in capture_report() if e["event"] == "incompatibility"]
  assert kinds == ["device_mismatch"]
  report.exception(RuntimeError, RuntimeError("Expected all tensors to be on the same device, cuda:0 and cpu"), None)
  kinds = [e["kind"] for e in capture_report() if e["event"] == "incompatibility"]
  assert kinds == ["device_mismatch"]  # not about tpu: not ours to report
  # Raised by the emulator's check (recorded then) and wrapped on the way up,
  # as dynamo wraps a backend's error: not reported twice.
  try:
    try:
      raise report.reported(RuntimeError(msg))
    except RuntimeError as e:
      raise RuntimeError(f"backend='tpu' raised: {e}") from e
  except RuntimeError as wrapped:
    report.exception(RuntimeError, wrapped, None)
  kinds = [e["kind"] for e in capture_report() if e["event"] == "incompatibility"]
  assert kinds == ["device_mismatch"]


def test_foreach_ops_check_devices():
  a = [torch.ones(3).to("tpu"), torch.ones(3).to("tpu")]
  with pytest.raises(RuntimeError, match=DEVICE_MIX):
    torch._foreach_add_(a, [torch.ones(3), torch.ones(3)])  # pylint: disable=protected-access
  torch._foreach_add_(a, [t.clone() for t in a])  # pylint: disable=protected-access
  assert a[0].device.type == "tpu" and a[0].cpu().eq(2).all()


def test_optimizer_with_cpu_state_fails_moved_runs():
  # An optimizer built before model.to("tpu") keeps the CPU parameters
  # (Module.to replaces them on TorchTPU): step() then mixes devices.
  model = torch.nn.Linear(4, 2)
  opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
  model.to("tpu")
  model(torch.ones(3, 4).to("tpu")).sum().backward()
  assert model.weight.grad.device.type == "tpu"
  assert opt.param_groups[0]["params"][0].device.type == "cpu"
  model2 = torch.nn.Linear(4, 2).to("tpu")
  opt2 = torch.optim.SGD(model2.parameters(), lr=0.1, momentum=0.9)
  model2(torch.ones(3, 4).to("tpu")).sum().backward()
  opt2.step()
  assert model2.weight.device.type == "tpu"


# -- Memory: a device copy never aliases host memory.

def test_device_copy_does_not_alias_its_source():
  c = torch.ones(3)
  t = c.to("tpu")
  c.add_(1)
  assert t.cpu().eq(1).all()
  a = np.ones(3, dtype=np.float32)
  t2 = torch.from_numpy(a).to("tpu")
  a += 1
  assert t2.cpu().eq(1).all()
  p = torch.ones(3).pin_memory()
  t3 = p.to("tpu", non_blocking=True)
  p.add_(1)
  assert t3.cpu().eq(1).all()


def test_host_copy_does_not_alias_the_device_tensor():
  t = torch.ones(3).to("tpu")
  for back in (t.cpu(), t.to("cpu", copy=False), t.to("cpu")):
    back.add_(1)
    assert t.cpu().eq(1).all()


def test_no_host_memory_interfaces_on_device_tensors(capture_report):
  t = torch.ones(3).to("tpu")
  assert not hasattr(t, "__array_interface__")
  with pytest.raises(TypeError, match="can't convert tpu:0 device type tensor to numpy"):
    np.asarray(t)
  with pytest.raises((RuntimeError, TypeError, BufferError, ValueError)):
    np.from_dlpack(t)
  # torch's own DLPack round trip keeps the device.
  back = torch.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
  assert back.device.type == "tpu"
  ptr_warnings = lambda: [e for e in capture_report()  # noqa: E731
                          if e["event"] == "warning" and "data_ptr" in e["message"]]
  assert not ptr_warnings()
  assert torch.ones(3).data_ptr()  # host tensor: nothing to say
  assert not ptr_warnings()
  assert t.data_ptr()
  [w] = ptr_warnings()
  assert w["kind"] == "not_checked" and w["file"] == os.path.abspath(__file__)


# -- Copies: non_blocking.

def test_non_blocking_device_to_host_copy_warns_like_torchtpu(capture_report):
  t = torch.ones(3).to("tpu")
  with pytest.warns(UserWarning, match=r"only works if the destination is already a pinned tensor"):
    out = t.to("cpu", non_blocking=True)
  assert out.eq(1).all()
  kinds = [e["kind"] for e in capture_report() if e["event"] == "warning"]
  assert kinds == ["non_blocking_copy"]


def test_non_blocking_copy_into_pinned_memory_is_not_checked(capture_report):
  t = torch.ones(3).to("tpu")
  dst = torch.zeros(3).pin_memory()
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # async on the chip: no TorchTPU warning
    dst.copy_(t, non_blocking=True)
  assert dst.eq(1).all()
  [w] = [e for e in capture_report() if e["event"] == "warning"]
  assert w["kind"] == "not_checked" and "synchronize" in w["message"]


def test_blocking_copies_are_silent(capture_report):
  t = torch.ones(3).to("tpu")
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    t.cpu()
    torch.zeros(3).copy_(t)
  assert not [e for e in capture_report() if e["event"] == "warning"]


# -- CUDA: a TPU host has none.

def test_cuda_is_hidden():
  assert os.environ["CUDA_VISIBLE_DEVICES"] == ""
  assert not torch.cuda.is_available()
  assert torch.cuda.device_count() == 0
  with pytest.raises((RuntimeError, AssertionError, AttributeError)):
    torch.ones(1, device="cuda")
  with pytest.raises((RuntimeError, AssertionError, AttributeError)):
    torch.cuda.synchronize()


# -- dtypes: TorchTPU 0.2.0 accepts 64-bit and complex tensors (its
# _AMP_SUPPORTED_DTYPES lists float64; its kernels refuse some dtypes per op,
# which the wheel does not map to ops, so that is reported as not checked).

def test_64bit_and_complex_dtypes_run():
  d = torch.arange(4, dtype=torch.float64).to("tpu") * 2
  assert d.dtype == torch.float64 and d.device.type == "tpu"
  z = torch.ones(2, dtype=torch.complex64).to("tpu") * 1j
  assert torch.equal(z.cpu(), torch.ones(2, dtype=torch.complex64) * 1j)


# -- torch.compile(backend="tpu"): TorchTPU's backend argument checks.

def test_compile_tpu_backend_refuses_what_torchtpu_refuses(capture_report):
  model = torch.nn.Linear(3, 3).to("tpu")
  x = torch.ones(2, 3).to("tpu")
  cases = [
      ({"dynamic": True}, "does not support torch.compile\\(..., dynamic=True"),
      ({"mode": "max-autotune"}, "Unexpected keyword arguments"),
      ({"options": {"num_dynamic_buckets": 9}}, "num_dynamic_buckets. must be an integer between 1 and 8"),
      ({"options": {"bucket_size": 0}}, "bucket_size. must be a positive integer"),
      ({"options": {"debug_callback": 3}}, "'debug_callback' must be callable"),
  ]
  for kwargs, pattern in cases:
    torch._dynamo.reset()  # pylint: disable=protected-access
    with pytest.raises(Exception, match=pattern):
      torch.compile(model, backend="tpu", **kwargs)(x)
  torch._dynamo.reset()  # pylint: disable=protected-access
  kinds = {e["kind"] for e in capture_report() if e["event"] == "incompatibility"}
  assert kinds == {"compile_arguments"}
  ok = torch.compile(model, backend="tpu", options={"async_compile": True, "bucket_size": 64})
  torch.testing.assert_close(ok(x).cpu(), model(x).cpu())
  torch._dynamo.reset()  # pylint: disable=protected-access


def test_compile_graph_breaks_are_dynamos_business():
  def f(t):
    t = t * 2
    print("graph break")  # noqa: T201
    return t + 1

  x = torch.ones(3).to("tpu")
  torch._dynamo.reset()  # pylint: disable=protected-access
  assert torch.compile(f, backend="tpu")(x).cpu().eq(3).all()
  torch._dynamo.reset()  # pylint: disable=protected-access
  with pytest.raises(Exception, match="(?i)graph break|unsupported"):
    torch.compile(f, backend="tpu", fullgraph=True)(x)
  torch._dynamo.reset()  # pylint: disable=protected-access


# -- Memory: TorchTPU's allocator answers torch.accelerator's memory API; HBM
# itself is not modeled, and the run says so.

def test_accelerator_memory_api_works_and_is_flagged_not_checked(capture_report):
  from xla2tpu_emulator import config  # pylint: disable=import-outside-toplevel

  torch.ones(3).to("tpu")
  torch.accelerator.empty_cache()
  assert torch.accelerator.memory_allocated() == 0
  assert torch.accelerator.get_memory_info() == (config.hbm_bytes(), config.hbm_bytes())
  warns = [e for e in capture_report() if e["event"] == "warning"]
  assert {w["kind"] for w in warns} == {"not_checked"}
  assert all("HBM" in w["message"] and w["file"] == os.path.abspath(__file__) for w in warns)


def test_view_of_a_strided_slice_is_named_as_the_strides_difference(run_emulated):
  # torch_xla tensors had no strides, so this ran there; TorchTPU refuses it as CUDA does.
  r = run_emulated("""
      import torch
      logits = torch.arange(24.0).reshape(2, 3, 4).to("tpu")
      ok = logits[:, :-1].reshape(-1, 4)
      same = logits[1:].view(-1, 4)
      bad = logits[:, :-1].view(-1, 4)  # VIEW
  """)
  assert r.returncode != 0
  [v] = r.all("incompatibility", "strided_view")
  assert v["line"] == r.line_of("# VIEW")
  assert v["op"] == "aten::view"
  assert "view size is not compatible with input tensor's size and stride" in v["message"]
