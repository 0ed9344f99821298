"""torch.tpu / torch.accelerator surface of TorchTPU 0.2.0."""

import os
import warnings

import pytest
import torch

from xla2tpu_emulator import distributed as emu_dist

INTERNAL = (
    "{} is internal to TorchTPU and can only be called by the PyTorch"
    " framework (torch and torch_tpu). Use {} instead."
)


@pytest.mark.parametrize(
    "name,prefer,call",
    [
        ("synchronize", "torch.accelerator.synchronize", lambda: torch.tpu.synchronize()),
        ("device_count", "torch.accelerator.device_count", lambda: torch.tpu.device_count()),
        ("current_device", "torch.accelerator.current_device_index", lambda: torch.tpu.current_device()),
        ("set_device", "torch.accelerator.set_device_index", lambda: torch.tpu.set_device(0)),
        ("is_available", "torch.accelerator.is_available", lambda: torch.tpu.is_available()),
        ("set_stream", "torch.accelerator.set_stream", lambda: torch.tpu.set_stream(None)),
        ("current_stream", "torch.accelerator.current_stream", lambda: torch.tpu.current_stream()),
        ("_DeviceContext", "torch.accelerator.device_index", lambda: torch.tpu.device(0)),
        ("initial_seed", "torch.accelerator.random.initial_seed", lambda: torch.tpu.initial_seed()),
        ("get_rng_state", "torch.accelerator.random.get_rng_state", lambda: torch.tpu.get_rng_state()),
    ],
)
def test_internal_apis_raise_with_replacement(name, prefer, call, capture_report):
  with pytest.raises(RuntimeError) as e:
    call()
  assert str(e.value) == INTERNAL.format(name, prefer)
  ev = [x for x in capture_report() if x["event"] == "incompatibility"]
  assert ev and ev[-1]["kind"] == "internal_api"
  assert ev[-1]["file"] == os.path.abspath(__file__)


def test_accelerator_replacements_work():
  torch.ones(1, device="tpu")  # device initialized in this process
  assert torch.accelerator.is_available()
  assert torch.accelerator.device_count() == 1
  assert torch.accelerator.current_device_index() == 0
  torch.accelerator.set_device_index(0)
  torch.accelerator.synchronize()
  with torch.accelerator.device_index(0):
    pass
  torch.manual_seed(77)
  assert torch.accelerator.random.initial_seed() == 77
  state = torch.accelerator.random.get_rng_state()
  a = torch.randn(4, device="tpu").cpu()
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.tpu.set_rng_state(state)
  assert torch.equal(torch.randn(4, device="tpu").cpu(), a)


def test_other_device_indices_fail(capture_report):
  with pytest.raises(ValueError, match="Cannot set TPU device to index 1, current process is bound to device index 0"):
    torch.accelerator.set_device_index(1)
  with pytest.raises(ValueError, match="Cannot set TPU device to index 1"):
    with torch.accelerator.device_index(1):
      pass
  with pytest.raises(RuntimeError, match="Device index 1 is out of bounds"):
    torch.empty(2, device="tpu:1")
  with pytest.raises(RuntimeError, match="Device index 1 is out of bounds"):
    torch.ones(2).to("tpu:1")
  kinds = [e["kind"] for e in capture_report() if e["event"] == "incompatibility"]
  assert kinds.count("set_device") == 4


def test_experimental_and_public_surface():
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    assert torch.tpu.get_device_name() == "TPU v5p"
    props = torch.tpu.get_device_properties()
    assert props.total_memory > 0 and props.multi_processor_count == 1
    assert torch.bfloat16 in torch.tpu.get_amp_supported_dtype()
    torch.tpu.manual_seed(3)
    torch.tpu.manual_seed_all(3)
    assert torch.tpu.is_initialized()
  assert any("<TorchTpu/ApiStage/ExperimentalApi/>" in str(x.message) for x in w)
  expected = {
      "EagerMode", "Event", "Precision", "Stream", "allow_excess_precision",
      "current_device", "current_stream", "default_generators",
      "default_stream", "device", "device_count", "device_of", "eager_mode",
      "get_amp_supported_dtype", "get_device_name", "get_device_properties",
      "get_rng_state", "initial_seed", "is_available", "is_initialized",
      "manual_seed", "manual_seed_all", "precision", "set_device",
      "set_eager_mode", "set_rng_state", "set_stream", "stream", "synchronize",
      "topology_aware_mesh", "compiler", "distributed", "ops", "optimizers",
      "pallas", "profiler",
  }
  assert expected <= set(dir(torch.tpu))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert torch.tpu.eager_mode == torch.tpu.EagerMode.DEFER_NEVER
    with torch.tpu.set_eager_mode(torch.tpu.EagerMode.DEFER_AND_FUSE):
      assert torch.tpu.eager_mode == torch.tpu.EagerMode.DEFER_AND_FUSE
    assert torch.tpu.eager_mode == torch.tpu.EagerMode.DEFER_NEVER
    with torch.tpu.precision(torch.tpu.Precision.HIGHEST):
      pass
    with pytest.raises(ValueError):
      with torch.tpu.precision("highest"):
        pass
    s = torch.tpu.Stream()
    e = s.record_event()
    e.synchronize()
    assert len(torch.tpu.default_generators) == 1


def test_float32_matmul_precision_patch():
  old = torch.get_float32_matmul_precision()
  try:
    torch.set_float32_matmul_precision("high")
    assert torch.get_float32_matmul_precision() == "high"
    with pytest.raises(ValueError, match="expected to be one of 'highest', 'high', or 'medium'"):
      torch.set_float32_matmul_precision("low")
  finally:
    torch.set_float32_matmul_precision(old)


def test_submodules(capture_report):
  import torch.tpu.ops as tops  # noqa: F401  (importable as a module)
  import torch.tpu.distributed as tdist  # noqa: F401
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
      torch.tpu.ops.all_gather_dim(torch.ones(2, device="tpu"), 0)
    a, b = torch.tpu.ops.optimization_barrier([torch.ones(2, device="tpu"), torch.zeros(1, device="tpu")])
    assert a.device.type == "tpu" and a.cpu().tolist() == [1.0, 1.0]
    lhs = torch.randn(5, 3)
    rhs = torch.randn(2, 3, 4)
    out = torch.tpu.ops.ragged_dot(lhs.tpu(), rhs.tpu(), torch.tensor([2, 3]).tpu())
    ref = torch.cat([lhs[:2] @ rhs[0], lhs[2:] @ rhs[1]])
    torch.testing.assert_close(out.cpu(), ref)
    with torch.tpu.compiler.custom_compiler_options({"xla_optimization_level": "O1"}):
      pass
    with pytest.raises(NotImplementedError, match="not emulated"):
      torch.tpu.pallas.jax_op("ns::f", lambda x: x)
    cfg = torch.tpu.profiler.TpuProfilerConfig(run_dir="/tmp/x")
    assert isinstance(cfg, torch.profiler._ExperimentalConfig)  # pylint: disable=protected-access
    mesh = torch.tpu.distributed.topology_aware_mesh((2, 2))
    assert mesh.tolist() == [[0, 1], [2, 3]]
  kinds = [e["kind"] for e in capture_report() if e["event"] == "incompatibility"]
  assert "not_emulated" in kinds


def test_set_tpu_launch_env_single_host(monkeypatch):
  for v in ("TORCH_TPU_SLICEBUILDER_ADDRESSES", "TORCH_TPU_TOPOLOGY",
            "TORCH_TPU_XPROF_SESSION_ID", "TPU_WORKER_HOSTNAMES",
            "JOB_COMPLETION_INDEX", "MASTER_ADDR", "MASTER_PORT", "NNODES",
            "NODE_RANK"):
    monkeypatch.delenv(v, raising=False)
  monkeypatch.setattr(emu_dist, "_resolved", {})
  monkeypatch.setenv("XLA2TPU_EMULATOR_CHIPS", "4")
  monkeypatch.setenv("TORCH_TPU_TOPOLOGY", "9,9,9")  # set: never overwritten
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=2)
  addrs = os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")
  assert len(addrs) == 2 and all(a.startswith("localhost:") for a in addrs)
  assert os.environ["TORCH_TPU_TOPOLOGY"] == "9,9,9"
  assert os.environ["TORCH_TPU_XPROF_SESSION_ID"]
  assert "MASTER_ADDR" not in os.environ and "MASTER_PORT" not in os.environ


def test_set_tpu_launch_env_multi_host_and_errors(monkeypatch):
  for v in ("TORCH_TPU_SLICEBUILDER_ADDRESSES", "TORCH_TPU_TOPOLOGY",
            "TORCH_TPU_XPROF_SESSION_ID", "MASTER_ADDR", "MASTER_PORT",
            "NNODES", "NODE_RANK", "TORCH_TPU_BASE_PORT",
            "TORCH_TPU_DEVICES_PER_HOST"):
    monkeypatch.delenv(v, raising=False)
  monkeypatch.setattr(emu_dist, "_resolved", {})
  monkeypatch.setenv("XLA2TPU_EMULATOR_CHIPS", "4")
  monkeypatch.setenv("TPU_WORKER_HOSTNAMES", "h0,h1")
  monkeypatch.setenv("JOB_COMPLETION_INDEX", "1")
  with pytest.raises(ValueError, match="expected nnodes to match"):
    emu_dist.set_tpu_launch_env_impl(nnodes=3)
  emu_dist.set_tpu_launch_env_impl()
  assert os.environ["NNODES"] == "2" and os.environ["NODE_RANK"] == "1"
  assert os.environ["MASTER_ADDR"] == "h0" and os.environ["MASTER_PORT"] == "29500"
  assert os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")[4] == "h1:8070"
  monkeypatch.setattr(emu_dist, "_resolved", {})
  monkeypatch.delenv("TPU_WORKER_HOSTNAMES")
  monkeypatch.delenv("JOB_COMPLETION_INDEX")
  monkeypatch.delenv("TORCH_TPU_SLICEBUILDER_ADDRESSES")
  monkeypatch.delenv("TORCH_TPU_TOPOLOGY")
  monkeypatch.setenv("XLA2TPU_EMULATOR_CHIPS", "0")
  with pytest.raises(ValueError, match="expected TPU devices, got none"):
    emu_dist.set_tpu_launch_env_impl()


def test_fresh_process_device_count_legacy_env_and_launch_printer(run_emulated):
  r = run_emulated(
      """
      import warnings, torch
      before = torch.accelerator.device_count()
      x = torch.ones(1, device="tpu")
      after = torch.accelerator.device_count()
      with warnings.catch_warnings(record=True) as w:
          warnings.simplefilter("always")
          n = torch.tpu.device_count()
          try:
              torch.tpu.set_device(1)
          except ValueError as e:
              err = str(e)
      print("COUNTS", before, after, n)
      print("WARN", any("InternalApi" in str(m.message) for m in w))
      print("ERR", err)
      """,
      env={"XLA2TPU_EMULATOR_CHIPS": "4", "TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS": "1"},
  )
  assert r.returncode == 0, r.stderr
  assert "COUNTS 4 1 1" in r.stdout
  assert "WARN True" in r.stdout
  assert "ERR Cannot set TPU device to index 1" in r.stdout
  kinds = [e["kind"] for e in r.all("warning")]
  assert "legacy_device_api" in kinds
  assert all(set(e) == {"event", "kind", "message", "file", "line"} for e in r.all("warning"))
  assert [e["kind"] for e in r.all("incompatibility")] == ["set_device"]
  summary = r.all("summary")[0]
  assert summary["device_initialized"] is True
  assert r.all("start")[0]["chips"] == 4
