#!/usr/bin/env bash
# Single-host SPMD fine-tune on a TPU VM: one process drives every chip.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(python -m torch.tpu.distributed | sed 's/^/export /')"
torchrun --nproc_per_node="$WORLD_SIZE" train.py --config configs/finetune.json "$@"
