"""Train, checkpoint, then resume from the checkpoint in a fresh model.

New-style torch_xla API (torch_xla.device / torch_xla.sync), one process per core.
"""
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

CKPT = 'ckpt.pt'


def build_model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


def get_batches(rank, world):
    torch.manual_seed(11)
    xs = torch.randn(5, 8, 8)  # 5 steps of 8 samples
    ys = torch.randn(5, 8, 2)
    return xs[:, rank::world], ys[:, rank::world]


def run_steps(model, optimizer, xs, ys, device, first, last):
    for step in range(first, last):
        x, y = xs[step].to(device), ys[step].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
        xm.master_print(f"step {step} loss={loss.item():.6f}")


def _mp_fn(index):
    device = torch_xla.device()
    rank, world = xr.global_ordinal(), xr.world_size()
    xs, ys = get_batches(rank, world)

    torch.manual_seed(0)
    model = build_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    run_steps(model, optimizer, xs, ys, device, 0, 3)

    xm.save({'model': model.state_dict(),
             'optimizer': optimizer.state_dict(),
             'step': 3}, CKPT)
    xm.rendezvous('saved')

    # --- resume, as a restarted job would ---
    state = torch.load(CKPT)
    model = build_model()
    model.load_state_dict(state['model'])
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    optimizer.load_state_dict(state['optimizer'])
    start = state['step']
    xm.master_print(f"resumed at step {start}")
    run_steps(model, optimizer, xs, ys, device, start, start + 2)

    checksum = sum(p.norm().item() for p in model.parameters())
    print(f"rank {rank} of {world} checksum={checksum:.6f}")


if __name__ == '__main__':
    xmp.spawn(_mp_fn)
