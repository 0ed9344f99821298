# Configure the TPU runtime through environment variables before importing torch_xla.
import os

os.environ["PJRT_DEVICE"] = "TPU"
os.environ["XLA_USE_BF16"] = "1"
os.environ.setdefault("XLA_PERSISTENT_CACHE_PATH", "xla_cache")
os.environ["XLA_FLAGS"] = "--xla_dump_to=hlo"  # still honoured by TorchTPU

import torch

if os.environ.get("PJRT_DEVICE") == "TPU":
    print("running on TPU")

device = torch.device("tpu:0")
torch.manual_seed(0)
x = torch.randn(4, 4).to(device)
print(f"{x.sum().item():.6f}")
