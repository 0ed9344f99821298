#!/usr/bin/env bash
# One process per TPU core on this host.
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(python -m torch.tpu.distributed | sed 's/^/export /')"
accelerate launch $([ "$WORLD_SIZE" -gt 1 ] && echo --multi_gpu) --num_processes="$WORLD_SIZE" --config_file configs/accelerate_tpu.yaml train.py "$@"
