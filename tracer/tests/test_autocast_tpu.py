"""TorchTPU autocast emulation (autocast_tpu.py). Needs tracer/.venv (torch 2.15.0):

    tracer/.venv/bin/python -m pytest tracer/tests/test_autocast_tpu.py -q

install() replaces AutocastCPU kernels process-wide, so the probe runs in a subprocess
(this file run as a script): the other tests keep stock torch. The probe also records
plain torch.autocast("cpu") before installing, to show the override changes CPU's casts.
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _probe() -> dict:
    import torch
    import torch.nn.functional as F

    from xla2tpu_tracer import autocast_tpu, output, phases
    from xla2tpu_tracer.recorder import OpRecorder, ops_to_json
    from xla2tpu_tracer.target import Target

    torch.manual_seed(0)

    def record(fn, ctx, cpu_may_refuse=False):
        rec = OpRecorder()
        with ctx(), rec:
            try:
                fn()
            except RuntimeError as e:
                # oneDNN has no bf16 LSTM primitive on CPUs without AVX-512 (seen on an AMD
                # EPYC host); the op and its input dtypes were recorded before the kernel refused.
                if not (cpu_may_refuse and "could not create a primitive descriptor" in str(e)):
                    raise
        return {o["op"]: o for o in ops_to_json(rec.stats)[0]}

    lstm = torch.nn.LSTM(8, 8, batch_first=True)
    seq = torch.randn(2, 3, 8)
    mat, vec = torch.randn(4, 4), torch.randn(4)
    stock = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
    res = {"stock": {"lstm": record(lambda: lstm(seq), stock, cpu_may_refuse=True), "mv": record(lambda: torch.mv(mat, vec), stock)}}

    res["installed"] = autocast_tpu.install()
    reg = autocast_tpu.emulator_registry()
    res["registry_policy"] = {n: reg.autocast_policy(n) for n in reg.autocast_ops()}
    res["cpu_autocast_ops"] = sorted(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU"))
    res["emulator_on_path"] = any(os.path.isdir(os.path.join(p, "torch_xla")) for p in sys.path if p)

    ac = autocast_tpu.autocast
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    res["tpu"] = {
        "linear_twice": record(lambda: (lin(x), lin(x)), ac),
        "lstm": record(lambda: lstm(seq), ac),
        "mv": record(lambda: torch.mv(mat, vec), ac),
        "mse": record(lambda: F.mse_loss(lin(x), torch.randn(2, 3)), ac),
        "cat": record(lambda: torch.cat([lin(x), torch.randn(2, 3)]), ac),
    }
    grid = torch.zeros(1, 2, 2, 2)
    res["tpu"]["grid"] = record(lambda: F.grid_sample(lin(x).reshape(1, 1, 2, 3), grid, align_corners=False), ac)

    def no_grad_then_grad():  # like the tracer's image probe inside the training forward
        lin.weight.grad = None
        with ac():
            with torch.no_grad():
                lin(x)
            lin(x).float().sum().backward()
        return lin.weight.grad is not None

    res["grad_after_no_grad_use"] = no_grad_then_grad()
    meta_lin = torch.nn.Linear(4, 3, device="meta")
    with ac():
        res["meta_dtype"] = str(meta_lin(torch.randn(2, 4, device="meta")).dtype)
        with torch.autocast("cpu", enabled=False):
            res["disabled_dtype"] = str(lin(x).dtype)
    res["after_exit_dtype"] = str(lin(x).dtype)

    # The tracer's path: wrap_trace sets phases.FORWARD_CONTEXT; backward runs outside it.
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))

    def trace(target, deadline):
        rec = OpRecorder()
        phases.run_phases(model, lambda m, training: m(x), rec)
        ops = ops_to_json(rec.stats)[0]
        return {"status": "ok", "method": "tiny/cpu", "ops": ops, "forward_context": phases.FORWARD_CONTEXT.__name__}

    out = autocast_tpu.wrap_trace(trace)(Target("timm", "toy"), 0)
    res["run_phases"] = {o["op"]: o for o in out["ops"]}
    res["forward_context"] = out["forward_context"]
    output.PRECISION = autocast_tpu.PRECISION
    res["profile_keys"] = sorted(output.make_profile(Target("timm", "toy"), out, {"torch": "2.15.0"}))
    res["profile_precision"] = output.make_profile(Target("timm", "toy"), out, {})["precision"]
    return res


@pytest.fixture(scope="module")
def probe():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tracer"), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    out = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_policies_come_from_the_emulator_registry(probe):
    inst, reg = probe["installed"], probe["registry_policy"]
    tpu = {n: p for n, p in inst.items() if p != "fallthrough"}
    assert len(reg) == 135
    assert tpu == reg  # every TorchTPU op, each with the emulator's policy
    # Every other op CPU autocast knows falls through (runs in its input dtypes).
    cpu_only = {n for n in probe["cpu_autocast_ops"] if n not in reg}
    assert cpu_only and {n for n, p in inst.items() if p == "fallthrough"} == cpu_only
    assert {"aten::cat", "aten::stack", "aten::mkldnn_rnn_layer"} <= cpu_only
    assert not probe["emulator_on_path"]  # the emulator's torch_xla package stays invisible


def test_op_on_torchtpu_list_gets_bf16_inputs(probe):
    ops = probe["tpu"]["linear_twice"]
    assert ops["aten::addmm"]["dtypes"] == ["bfloat16"]
    # weight and bias are cast once (cached_cast's parameter cache), the input on each call
    assert ops["aten::_to_copy"]["count"] == 4
    # aten::mv is on TorchTPU's list only: stock CPU autocast leaves it in float32
    assert probe["tpu"]["mv"]["aten::mv"]["dtypes"] == ["bfloat16"]
    assert probe["stock"]["mv"]["aten::mv"]["dtypes"] == ["float32"]


def test_op_only_on_cpu_list_stays_float32(probe):
    # CPU autocast runs mkldnn_rnn_layer (nn.LSTM) in bf16; TorchTPU has no autocast kernel for it
    stock = probe["stock"]["lstm"]["aten::mkldnn_rnn_layer"]["dtypes"]
    assert "bfloat16" in stock
    ours = probe["tpu"]["lstm"]["aten::mkldnn_rnn_layer"]["dtypes"]
    assert "float32" in ours and "bfloat16" not in ours  # (uint8: its workspace output)
    assert "aten::_to_copy" not in probe["tpu"]["lstm"]
    # cat is promote on CPU, absent on TorchTPU: it receives the mixed dtypes uncast
    assert probe["tpu"]["cat"]["aten::cat"]["dtypes"] == ["bfloat16", "float32"]


def test_fp32_policy_op_upcasts(probe):
    ops = probe["tpu"]["mse"]
    assert ops["aten::addmm"]["dtypes"] == ["bfloat16"]
    assert ops["aten::mse_loss"]["dtypes"] == ["float32"]
    assert ops["aten::_to_copy"]["dtypes"] == ["bfloat16", "float32"]


def test_promote_op_widens_without_recording_promote_types(probe):
    ops = probe["tpu"]["grid"]
    assert ops["aten::grid_sampler_2d"]["dtypes"] == ["float32"]  # bf16 input, float32 grid
    assert "aten::promote_types" not in ops


def test_cast_cache_keeps_gradients_after_a_no_grad_use(probe):
    assert probe["grad_after_no_grad_use"]


def test_context_scope_and_meta_tensors(probe):
    assert probe["meta_dtype"] == "torch.bfloat16"  # meta tensors have no AutocastCPU key of their own
    assert probe["disabled_dtype"] == "torch.float32"  # a model's own autocast(enabled=False) wins
    assert probe["after_exit_dtype"] == "torch.float32"


def test_phases_forward_under_autocast_backward_follows(probe):
    ops = probe["run_phases"]
    assert probe["forward_context"] == "autocast"
    assert ops["aten::addmm"]["dtypes"] == ["bfloat16"]
    assert ops["aten::addmm"]["phases"] == ["forward", "inference"]
    # layer_norm is not on TorchTPU's list: it runs in the bf16 it was given
    assert ops["aten::native_layer_norm"]["dtypes"] == ["bfloat16", "float32"]
    # backward is outside autocast; its matmuls run in the dtypes autocast produced
    assert ops["aten::mm"]["phases"] == ["backward"] and "bfloat16" in ops["aten::mm"]["dtypes"]
    assert "backward" in ops["aten::_to_copy"]["phases"]  # grads cast back to the float32 parameters
    assert "precision" in probe["profile_keys"] and probe["profile_precision"] == "bf16-autocast"


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(ROOT, "tracer"))
    print(json.dumps(_probe(), default=str))
