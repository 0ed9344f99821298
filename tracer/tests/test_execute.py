"""execute.py on hand-built modules, in a subprocess: the emulator changes process-wide state
(import blockers, CUDA hidden) that the recorder tests must not see."""

import json
import os
import subprocess
import sys

TRACER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r'''
import contextlib, json, torch
from xla2tpu_tracer import execute
execute.load_emulator()

# Model code lives in a library, outside this package: compile it under such a file name.
MODELS = """
import torch
class Clean(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
    def forward(self, x):
        return self.lin(x) + torch.arange(4, device=x.device)

class Mixes(Clean):
    def forward(self, x):
        return self.lin(x) + torch.arange(4)  # a CPU tensor made inside forward
"""
ns = {}
exec(compile(MODELS, "/site-packages/somelib/modeling.py", "exec"), ns)
Clean, Mixes = ns["Clean"], ns["Mixes"]

out = {}
for name, cls in (("clean", Clean), ("mixes", Mixes)):
    ex = execute.Executor()
    x = torch.randn(2, 4)  # the harness's input, on the CPU: moved for the device run
    call = lambda m, training: m(x)
    ex(cls(), call, train=True)
    out[name] = execute._precision_result(ex.entries, "float32")
print(json.dumps(out))
'''


def test_device_mix_in_forward_fails_at_the_model_line_and_a_clean_model_passes():
    # The script is this package's caller, as the recipes are: write it inside the package dir.
    path = os.path.join(TRACER, "xla2tpu_tracer", "_test_execute_script.py")
    with open(path, "w") as f:
        f.write(SCRIPT)
    try:
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", XLA2TPU_EMULATOR_STATE=os.path.join(TRACER, "out", "exec-test"))
        res = subprocess.run([sys.executable, "-m", "xla2tpu_tracer._test_execute_script"], cwd=TRACER, env=env,
                             capture_output=True, text=True, timeout=300)
    finally:
        os.remove(path)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["clean"] == {"status": "pass"}
    f = out["mixes"]["failure"]
    assert out["mixes"]["status"] == "fail"
    assert (f["kind"], f["phase"], f["step"]) == ("device_mix", "inference", "inference")
    assert f["site"] == "somelib/modeling.py:12"


def test_failures_are_classified_by_what_they_say_about_the_chip():
    from xla2tpu_tracer.execute import classify

    # The emulator's CPU kernel refused a dtype TorchTPU's own histc kernel may take: not checked.
    cpu = classify(NotImplementedError('"histogram_cpu" not implemented for \'Int\''), [])
    assert cpu["kind"] == "not_emulated"
    onednn = classify(RuntimeError("could not create a primitive descriptor for the LSTM forward propagation primitive"), [])
    assert onednn["kind"] == "not_emulated"
    # No kernel for the tpu backend's sparse key: TorchTPU 0.2.0 has none either (missing_fallback).
    sparse = classify(NotImplementedError("Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' with arguments "
                                          "from the 'Sparsetpu' backend. This could be because ..."), [])
    assert (sparse["kind"], sparse["op"]) == ("missing_op", "aten::_sparse_coo_tensor_with_dims_and_tensors")
    mix = classify(RuntimeError("Expected all tensors to be on the same device, but got weight is on cpu, different "
                                "from other tensors on tpu:0"), [])
    assert mix["kind"] == "device_mix"
    # An event from the emulator names the kind, whatever the text says.
    ev = classify(RuntimeError("whatever"), [{"event": "incompatibility", "kind": "missing_op", "op": "aten::foo"}])
    assert (ev["kind"], ev["op"]) == ("missing_op", "aten::foo")


def _execute(args, tmp_path):
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", HF_HUB_OFFLINE="1")
    res = subprocess.run([sys.executable, "-m", "xla2tpu_tracer", "execute", "--ops", os.path.join(TRACER, "..", "corpus", "ops"),
                          "--log-dir", str(tmp_path / "logs"), "--timeout", "240"] + args,
                         cwd=TRACER, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout


def _verdict_tree(out):
    from xla2tpu_tracer.execute import _verdicts

    got = {}
    for lib in sorted(os.listdir(out)):
        if os.path.isdir(os.path.join(out, lib)):
            for name in sorted(os.listdir(os.path.join(out, lib))):
                with open(os.path.join(out, lib, name)) as f:
                    prof = json.load(f)
                got[prof["id"]] = (_verdicts(prof), prof["versions"], prof["classes"])
    return got


def test_local_and_ray_executions_agree(tmp_path, ray_head):
    """The same types through the local pool and as Ray tasks on a real head: same verdicts,
    failures and versions (the executor path of `execute --ray`)."""
    ids = ["transformers/deepseek_v3", "pyannote-audio/XVectorSincNet", "timm/mobilenetv3"]
    local, remote = tmp_path / "local", tmp_path / "ray"
    _execute(["--out", str(local), "--jobs", "2", "--only"] + ids, tmp_path)
    out = _execute(["--out", str(remote), "--ray", ray_head, "--rss-mb", "3000", "--only"] + ids, tmp_path)
    assert "ray: " in out
    tree = _verdict_tree(local)
    assert sorted(tree) == sorted(ids)
    assert tree == _verdict_tree(remote), "Ray and local executions disagree"
    # Not a vacuous agreement: both pass, the MoE one through its integer histc, which the
    # wheel's kernel takes (settled; nothing left unchecked).
    assert tree["pyannote-audio/XVectorSincNet"][0]["float32"] == {"status": "pass"}
    assert tree["transformers/deepseek_v3"][0]["float32"] == {"status": "pass"}
