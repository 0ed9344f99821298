"""The second oracle for the device rules: torch_xla 2.9 on its CPU device (a
real out-of-tree accelerator backend) must give the pinned outcome of every
case in device_rules/cases.py. A case the two backends disagree on is pinned
as such; an unexpected change in either fails here."""

import json
import os
import subprocess

import pytest

from device_rules.cases import CASES, outcome

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON = os.path.join(REPO, "difftest", ".venv", "bin", "python")


@pytest.fixture(scope="module")
def torch_xla_outcomes():
  if not os.path.exists(PYTHON):
    if os.environ.get("XLA2TPU_REQUIRE_DIFFTEST"):
      pytest.fail(f"XLA2TPU_REQUIRE_DIFFTEST is set but {PYTHON} is missing: run difftest/setup_venv.sh")
    pytest.skip("difftest/.venv (torch_xla) missing: run difftest/setup_venv.sh")
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(("XLA2TPU_EMULATOR_", "TORCH_TPU_", "PYTHONPATH"))}
  env["PJRT_DEVICE"] = "CPU"
  proc = subprocess.run(
      [PYTHON, os.path.join(HERE, "device_rules", "oracle.py")],
      env=env, capture_output=True, text=True, timeout=600, check=False,
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_xla_agrees(name, torch_xla_outcomes):
  got = torch_xla_outcomes[name]
  assert got == outcome(name, "torch_xla"), (name, torch_xla_outcomes.get(name + ":message"))
