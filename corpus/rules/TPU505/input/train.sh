#!/bin/bash
export XLA_PERSISTENT_CACHE_PATH=/mnt/disks/cache/xla
mkdir -p "${XLA_PERSISTENT_CACHE_PATH}"
python train.py
