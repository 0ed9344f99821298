"""Regress a small curve with accelerate on a TPU VM host.

`scripts/launch.sh` starts it with `accelerate launch --tpu` and the host's accelerate config;
accelerate picks the XLA device and one process per core.
"""
import argparse

import torch
import torch_xla.core.xla_model as xm
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    return parser.parse_args()


def main():
    opts = parse()
    accelerator = Accelerator()
    g = torch.Generator().manual_seed(3)
    t = torch.linspace(-1, 1, 48).unsqueeze(1)
    target = torch.sin(3 * t) + 0.05 * torch.randn(48, 1, generator=g)
    loader = DataLoader(TensorDataset(t, target), batch_size=6)
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(1, 12), torch.nn.Tanh(), torch.nn.Linear(12, 1))
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    net, opt, loader = accelerator.prepare(net, opt, loader)

    for epoch in range(opts.epochs):
        total = torch.zeros((), device=accelerator.device)
        for tb, yb in loader:
            loss = torch.nn.functional.l1_loss(net(tb), yb)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
            total += loss.detach()
        xm.master_print(f"epoch {epoch}: mean l1 {accelerator.reduce(total, reduction='mean').item() / len(loader):.6f}")

    weights = accelerator.unwrap_model(net).state_dict()
    on = sorted({w.device.type for w in weights.values()})
    checksum = sum(w.double().sum().item() for w in weights.values())
    print(f"process {accelerator.process_index} of {accelerator.num_processes} on={on} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
