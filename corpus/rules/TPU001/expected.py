# TPU001 xla-import: imports removed once nothing uses them, and so are assignments aliasing them
import os
import torch
import torch_xla.debug.metrics as met  # still used below: must stay
import torch.distributed as dist


device = torch.device("tpu:0")
print(dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1")), dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0")))
assert met.counter_value("CompileTime") > 0
