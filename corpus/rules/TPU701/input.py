# TPU701 legacy-device-api
import torch

torch.tpu.synchronize()
n = torch.tpu.device_count()
i = torch.tpu.current_device()
torch.tpu.set_device(0)
ok = torch.tpu.is_available()
torch.cuda.synchronize()  # CUDA: untouched
