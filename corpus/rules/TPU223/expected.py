# TPU223 xla-distributed-checkpoint: reported only
from torch_xla.experimental.distributed_checkpoint import CheckpointManager

chkpt = CheckpointManager("gs://bucket/ckpt", save_interval=100)
