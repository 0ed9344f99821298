"""Regress a small curve with accelerate on a TPU VM host.

`scripts/launch.sh` starts it with `accelerate launch --tpu` and the host's accelerate config;
accelerate picks the XLA device and one process per core.
"""
import os
import argparse

import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def accelerate_tpu_processes():
    """True in one of several TorchTPU processes (torchrun, `accelerate launch`).

    accelerate has no multi-process type for the "tpu" device: each rank would train
    alone. Its multi-process CPU mode (`cpu=True`) shards the data and wraps DDP without
    device ids; ACCELERATE_TORCH_DEVICE keeps the device "tpu", and the process group it
    finds is TorchTPU's (gloo for the CPU tensors accelerate gathers).
    """
    if (
        int(os.environ.get("WORLD_SIZE", "1")) <= 1
        or not torch.accelerator.is_available()
    ):
        return False
    if torch.accelerator.current_accelerator().type != "tpu":
        return False
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        # accelerate's multi-process CPU mode has no FSDP: it would silently use DDP.
        raise RuntimeError(
            "accelerate has no FSDP mode for TorchTPU: shard with torch.distributed.fsdp.fully_shard"
        )
    os.environ.setdefault("ACCELERATE_TORCH_DEVICE", "tpu")
    if not dist.is_initialized():
        dist.init_process_group("tpu:tpu_dist,cpu:gloo")
    return True


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    return parser.parse_args()


def main():
    opts = parse()
    accelerator = Accelerator(cpu=accelerate_tpu_processes())
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
        torchtpu_rank0_print(f"epoch {epoch}: mean l1 {accelerator.reduce(total, reduction='mean').item() / len(loader):.6f}")

    weights = accelerator.unwrap_model(net).state_dict()
    on = sorted({w.device.type for w in weights.values()})
    checksum = sum(w.double().sum().item() for w in weights.values())
    print(f"process {accelerator.process_index} of {accelerator.num_processes} on={on} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
