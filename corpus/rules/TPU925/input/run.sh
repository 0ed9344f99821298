#!/usr/bin/env bash
# TPU925 spmd-python-launch: `python` of an SPMD script of the run becomes TorchTPU's launch
# (converted, unsafe); other scripts, quoted commands and interpreter options stay
set -euo pipefail
python prepare.py
python train.py --steps 10 "$@"
python3 ./train.py
sudo python train.py
bash -c "python train.py"
python -u train.py
