#!/usr/bin/env bash
# Train on a single TPU VM host.
set -euo pipefail

export XLA_USE_BF16=1
export TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=/tmp/xla_cache

pip install -r requirements.txt
python train.py --epochs 3 --batch-size 64 "$@"
