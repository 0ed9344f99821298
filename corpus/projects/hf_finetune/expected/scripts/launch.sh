#!/usr/bin/env bash
# Fine-tune on one TPU VM host: accelerate starts a process per TPU core.
set -euo pipefail
cd "$(dirname "$0")/.."

pip install -r requirements.txt
eval "$(python -m torch.tpu.distributed | sed 's/^/export /')"
accelerate launch $([ "$WORLD_SIZE" -gt 1 ] && echo --multi_gpu) --num_processes="$WORLD_SIZE" --config_file configs/accelerate_tpu.yaml train.py --max-steps 100 "$@"
