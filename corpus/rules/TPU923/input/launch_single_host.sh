#!/bin/bash
# One TPU VM host: accelerate's torch_xla launcher, one process per core.
set -e
accelerate launch --tpu --num_processes 8 --downcast_bf16 \
    --config_file tpu_config.yaml \
    nlp_example.py --mixed_precision bf16
