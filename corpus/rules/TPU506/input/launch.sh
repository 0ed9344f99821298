#!/bin/bash
# Old XRT setup on a v3-8 TPU node: the XRT variable goes, the chip count is reported (TPU508)
export XRT_TPU_CONFIG="localservice;0;localhost:51011"
export TPU_NUM_DEVICES=8
docker run --rm --privileged -e XRT_TPU_CONFIG="localservice;0;localhost:51011" -v "$PWD:/app" trainer python /app/train.py
