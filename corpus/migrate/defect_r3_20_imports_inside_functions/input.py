"""A learning-rate sweep, one rate per core, in a script that imports torch_xla and
torch.distributed only inside the functions using them (so `--help` never loads them).

Issue 43, item 20: code the migration put outside `main` (the launcher's module-level helpers,
the worker's first lines) used the name `dist`, bound only by `main`'s own import: NameError.
"""
import argparse
import os

import torch


def make_batch(step):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(5, 3, generator=g)
    return x, x.mean(dim=1, keepdim=True)


def sweep_worker(index, flags):
    import torch_xla.core.xla_model as xm

    device = xm.xla_device()
    lr = flags.base_lr * (index + 1)  # this core's learning rate
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(flags.steps):
        x, y = make_batch(step)
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
    print(f"rank {index} of {flags.nprocs}: lr={lr:.3f} loss={loss.item():.6f}", flush=True)


def main():
    import torch.distributed as dist
    import torch_xla.distributed.xla_multiprocessing as xmp

    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--base_lr", type=float, default=0.05)
    flags = parser.parse_args()
    if dist.is_torchelastic_launched():  # torchrun started one process per core already
        sweep_worker(int(os.environ["LOCAL_RANK"]), flags)
    else:
        xmp.spawn(sweep_worker, args=(flags,), nprocs=flags.nprocs)


if __name__ == "__main__":
    main()
