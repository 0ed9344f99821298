#!/usr/bin/env bash
# Train on a single TPU VM host.
set -euo pipefail

export PJRT_DEVICE=TPU
export XLA_USE_BF16=1
export XLA_PERSISTENT_CACHE_PATH=/tmp/xla_cache

pip install -r requirements.txt
python train.py --epochs 3 --batch-size 64 "$@"
