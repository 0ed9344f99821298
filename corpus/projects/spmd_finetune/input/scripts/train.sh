#!/usr/bin/env bash
# Single-host SPMD fine-tune on a TPU VM: one process drives every chip.
set -euo pipefail
cd "$(dirname "$0")/.."
export PJRT_DEVICE=TPU
python train.py --config configs/finetune.json "$@"
