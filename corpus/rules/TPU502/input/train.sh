#!/bin/bash
# bf16 everywhere, the torch_xla way
export XLA_USE_BF16=1
python train.py --epochs 3
