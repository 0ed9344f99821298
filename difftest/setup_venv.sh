#!/usr/bin/env bash
# Create difftest/.venv: the pinned torch_xla 2.9.0 reference environment (CPU only,
# PJRT_DEVICE=CPU) in which differential tests run the ORIGINAL torch_xla programs.
# Idempotent: re-running re-checks the install and the CUDA trim, then re-verifies.
#
#   PYTHON=python3.11        interpreter for a new venv (default: python3)
#   DIFFTEST_INSTALLER=pip   install with plain pip instead of uv (slower; see README)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
req="$here/requirements-torch_xla.txt"
py="${PYTHON:-python3}"
installer="${DIFFTEST_INSTALLER:-uv}"
uv_version=0.13.9

if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi

# requirements-torch_xla.txt is the complete, pinned package list; --no-deps keeps the
# installer from pulling in torch's CUDA extras that CPU use does not need (triton,
# cuSOLVER, NVRTC, NVTX: ~1.2 GB installed). uv (a single binary from PyPI) downloads
# and unpacks in parallel: ~35 s cold instead of ~80-100 s with pip (README.md).
# Bytecode is compiled at install time on purpose: with PYTHONDONTWRITEBYTECODE=1
# every later `import torch_xla` would otherwise recompile (+~7 s per process).
if [ "$installer" = uv ] && "$venv/bin/python" -m pip install --quiet "uv==$uv_version"; then
    if [ -z "${SSL_CERT_FILE:-}" ] && [ -n "${PIP_CERT:-}" ]; then export SSL_CERT_FILE="$PIP_CERT"; fi
    "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --no-deps --compile-bytecode -r "$req"
else
    "$venv/bin/python" -m pip install --quiet --no-deps -r "$req"
fi

# Packages that an older or hand-made .venv may hold (e.g. from a plain
# `pip install torch==2.9.0`) and that the CPU reference does not need.
trim=(triton nvidia-cusolver-cu12 nvidia-cuda-nvrtc-cu12 nvidia-nvtx-cu12)
present=()
for p in "${trim[@]}"; do
    if "$venv/bin/python" -m pip show --quiet "$p" >/dev/null 2>&1; then present+=("$p"); fi
done
if [ "${#present[@]}" -gt 0 ]; then
    "$venv/bin/python" -m pip uninstall --quiet -y "${present[@]}"
fi

# Verify: a tensor op runs on the XLA CPU device and gives the right result.
PJRT_DEVICE=CPU "$venv/bin/python" - <<'PY'
import sys
import numpy, torch, torch_xla
import torch_xla.runtime as xr
dev = torch_xla.device()
x = torch.arange(6.0).reshape(2, 3).to(dev)
y = (x @ x.T + 1).sum()
torch_xla.sync()
got = y.item()
if xr.device_type() != "CPU" or got != 87.0:
    sys.exit(f"verification FAILED: device_type={xr.device_type()!r} result={got!r} (want CPU, 87.0)")
print("ok: torch", torch.__version__, "torch_xla", torch_xla.__version__, "numpy", numpy.__version__,
      "device", dev, "type", xr.device_type(), "result", got)
PY
du -sh "$venv" | awk '{print "venv size: " $1}'
