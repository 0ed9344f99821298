#!/bin/bash
set -e
cd examples/pytorch/text-classification

eval "$(python -m torch.tpu.distributed | sed 's/^/export /')"
torchrun --nproc_per_node="$WORLD_SIZE" \
    run_glue.py \
    --model_name_or_path bert-base-cased \
    --task_name mrpc \
    --do_train \
    --output_dir /tmp/mrpc
