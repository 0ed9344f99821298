"""Hardware checks through a variable: the device kind is read once and compared later."""
import sys

import torch
import torch.nn as nn


def check_hardware(device):
    hw = (torch.accelerator.current_accelerator() or torch.device("cpu")).type
    print(f"running on {hw}")
    if hw not in ("tpu", "NEURON", "cpu"):
        sys.exit(f"Only TPU supported, found {hw}")
    is_accelerator = hw == "tpu"
    return is_accelerator or hw == "cpu"


def main():
    device = torch.device("tpu:0")
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
        print(f"step {step} loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
