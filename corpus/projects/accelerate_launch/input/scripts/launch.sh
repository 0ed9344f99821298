#!/usr/bin/env bash
# One process per TPU core on this host.
set -euo pipefail
cd "$(dirname "$0")/.."

export PJRT_DEVICE=TPU
accelerate launch --config_file configs/accelerate_tpu.yaml --tpu train.py "$@"
