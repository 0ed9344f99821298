#!/bin/bash
# On a TPU VM: the trainer reads the device variable to pick the accelerator.
export PJRT_DEVICE=TPU
python launch.py "$@"
