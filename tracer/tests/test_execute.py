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
