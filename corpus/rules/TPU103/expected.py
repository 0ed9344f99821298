# TPU103 device-kind
import torch

kind = (torch.accelerator.current_accelerator() or torch.device("cpu")).type
hw = (torch.accelerator.current_accelerator() or torch.device("cpu")).type
if (torch.accelerator.current_accelerator() or torch.device("cpu")).type == "tpu":
    print("tpu")
acc = torch.accelerator.current_accelerator()  # already portable: untouched
