# TPU301 xla-autocast
import torch

device = torch.device("tpu:0")
with torch.autocast("tpu", dtype=torch.bfloat16):
    pass
with torch.autocast("tpu", dtype=torch.bfloat16):
    pass
with torch.autocast("tpu", dtype=torch.float16):  # fp16 on TPU: carried over as written
    pass
with torch.autocast("tpu", dtype=torch.bfloat16):
    pass
with torch.autocast("cuda", dtype=torch.float16):  # CUDA autocast: untouched
    pass
