#!/usr/bin/env bash
# Create tracer/.venv with the pinned tracer dependencies (CPU use only).
# Idempotent: re-running re-checks the install and the CUDA trim.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
py="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"

# The PyPI torch wheel is the CUDA build. Its shared libraries link against the
# CUDA runtime, cuBLAS, cuDNN, NCCL, ... so those must stay, but these packages
# are not needed to import torch and run CPU / FakeTensor / meta code.
trim=(triton cuda-bindings cuda-pathfinder cuda-toolkit nvidia-cuda-cccl nvidia-nvtx nvidia-cusolver)
present=()
for p in "${trim[@]}"; do
    if "$venv/bin/python" -m pip show --quiet "$p" >/dev/null 2>&1; then present+=("$p"); fi
done
if [ "${#present[@]}" -gt 0 ]; then
    "$venv/bin/python" -m pip uninstall --quiet -y "${present[@]}"
fi

# Verify the trimmed environment still works on CPU.
HF_HUB_OFFLINE=1 "$venv/bin/python" - <<'PY'
import torch, transformers, diffusers, timm, torchvision
from torch._subclasses.fake_tensor import FakeTensorMode
x = torch.randn(3, 4, requires_grad=True)
(x * 2).sum().backward()
with FakeTensorMode():
    torch.empty(2, 2) @ torch.empty(2, 2)
print("ok: torch", torch.__version__, "transformers", transformers.__version__,
      "diffusers", diffusers.__version__, "timm", timm.__version__, "torchvision", torchvision.__version__)
PY
# ray: the executor of `exact --ray` (and its test's local head).
"$venv/bin/python" -c "import ray; print('ok: ray', ray.__version__)"
du -sh "$venv" | awk '{print "venv size: " $1}'
