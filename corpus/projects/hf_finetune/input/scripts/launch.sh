#!/usr/bin/env bash
# Fine-tune on one TPU VM host: accelerate starts a process per TPU core.
set -euo pipefail
cd "$(dirname "$0")/.."

export PJRT_DEVICE=TPU
pip install -r requirements.txt
accelerate launch --config_file configs/accelerate_tpu.yaml --tpu --num_processes 8 train.py --max-steps 100 "$@"
