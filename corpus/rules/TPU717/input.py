# TPU717 accelerate-xla-type: reported only
from accelerate import Accelerator, DistributedType
from accelerate.utils import DistributedType as DT

accelerator = Accelerator(cpu=True)  # the CPU asked for: TPU714 leaves it
# pad to one length on TPU: XLA compiled a graph per shape
pad_to = 128 if accelerator.distributed_type == DistributedType.XLA else None
legacy = accelerator.distributed_type == DT.TPU
gpu = accelerator.distributed_type == DistributedType.MULTI_GPU  # untouched
