#!/bin/bash
export TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=/mnt/disks/cache/xla
mkdir -p "${TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT}"
python train.py
