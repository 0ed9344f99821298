"""Hardware checks through a variable: the device kind is read once and compared later."""
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def check_hardware(device):
    hw = xm.xla_device_hw(device)
    print(f"running on {hw}")
    if hw not in ("TPU", "NEURON", "CPU"):
        sys.exit(f"Only TPU supported, found {hw}")
    is_accelerator = hw == "TPU"
    return is_accelerator or hw == "CPU"


def main():
    device = xm.xla_device()
    if not check_hardware(device):
        sys.exit("no usable device")
    torch.manual_seed(0)
    model = nn.Linear(6, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 6).to(device), torch.randn(8, 2).to(device)
    for step in range(3):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
