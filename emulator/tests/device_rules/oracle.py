"""Runs the device-rule cases on torch_xla's CPU device (the differential
venv) and prints {case: "raise" | "run"} as JSON: the second oracle.

Usage: PJRT_DEVICE=CPU difftest/.venv/bin/python oracle.py
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_xla  # noqa: E402

from device_rules.cases import CASES  # noqa: E402


def main():
  dev = torch_xla.device()
  out = {}
  for name, case in CASES.items():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8).to(dev)
    try:
      r = eval(case[0], {"torch": torch, "F": F, "x": x, "dev": dev})  # pylint: disable=eval-used
      for t in r if isinstance(r, (tuple, list)) else [r]:
        if isinstance(t, torch.Tensor):
          t.cpu()  # materialize: torch_xla checks devices when it runs the graph
      out[name] = "run"
    except RuntimeError as e:
      out[name] = "raise"
      out[name + ":message"] = str(e).splitlines()[0][:200]
  print(json.dumps(out))


if __name__ == "__main__":
  main()
