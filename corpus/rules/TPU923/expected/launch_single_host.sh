#!/bin/bash
# One TPU VM host: accelerate's torch_xla launcher, one process per core.
set -e
eval "$(python -m torch.tpu.distributed | sed 's/^/export /')"
accelerate launch $([ "$WORLD_SIZE" -gt 1 ] && echo --multi_gpu) --num_processes="$WORLD_SIZE" \
    --config_file tpu_config.yaml \
    nlp_example.py --mixed_precision bf16
