#!/usr/bin/env bash
# Fine-tune on a single TPU VM host.
set -euo pipefail

export HF_HOME=/mnt/disks/data/hf  # cache on the data disk

cd "$(dirname "$0")"
python3 train.py \
    --model_name_or_path google/gemma-2b \
    --output_dir /tmp/out
