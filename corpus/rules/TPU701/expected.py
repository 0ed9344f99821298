# TPU701 legacy-device-api
import torch

torch.accelerator.synchronize()
n = torch.accelerator.device_count()
i = torch.accelerator.current_device_index()
torch.accelerator.set_device_index(0)
ok = torch.accelerator.is_available()
torch.cuda.synchronize()  # CUDA: untouched
