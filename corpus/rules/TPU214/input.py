# TPU214 xla-process-group
import torch.distributed as dist

dist.init_process_group("xla", init_method="xla://")
dist.init_process_group(backend="xla")
dist.init_process_group("xla", init_method="xla://", timeout=None)
dist.init_process_group("nccl", init_method="env://")  # not XLA: untouched
dist.init_process_group("tpu_dist")  # already TorchTPU: untouched
