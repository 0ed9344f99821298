# TPU103 device-kind
import torch

kind = torch.accelerator.current_accelerator().type
hw = torch.accelerator.current_accelerator().type
if torch.accelerator.current_accelerator().type == "TPU":
    print("tpu")
acc = torch.accelerator.current_accelerator()  # already portable: untouched
