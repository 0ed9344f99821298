# TPU214 xla-process-group
import torch.distributed as dist

dist.init_process_group("tpu_dist")
dist.init_process_group(backend="tpu_dist")
dist.init_process_group("tpu_dist", timeout=None)
dist.init_process_group("nccl", init_method="env://")  # not XLA: untouched
dist.init_process_group("tpu_dist")  # already TorchTPU: untouched
