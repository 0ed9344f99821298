#!/bin/bash
# Train on every worker of the v3-32 pod.
TPU_NAME=my-v3-32
python3 -m torch_xla.distributed.xla_dist \
    --tpu=$TPU_NAME --restart-tpuvm-pod-server -- \
    python3 /usr/share/torch-xla/pytorch/xla/test/test_train_mp_imagenet.py --fake_data
