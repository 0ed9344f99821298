#!/bin/bash
accelerate launch --tpu --tpu_cluster --tpu_use_sudo \
    --main_training_function main \
    nlp_example.py --mixed_precision bf16
