#!/bin/bash
set -e
cd examples/pytorch/text-classification

python ../xla_spawn.py --num_cores 8 \
    run_glue.py \
    --model_name_or_path bert-base-cased \
    --task_name mrpc \
    --do_train \
    --output_dir /tmp/mrpc
