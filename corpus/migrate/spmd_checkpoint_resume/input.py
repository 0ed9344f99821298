# torch_xla SPMD data parallel with distributed checkpointing, the shape of pytorch/xla's
# docs/source/perf/spmd_distributed_checkpoint.md: train, save the model and optimizer state with
# torch.distributed.checkpoint and the SPMD planners, then resume as a restarted job would (a fresh
# model and optimizer, the optimizer primed so its state exists to load into) and train on.
import numpy as np
import torch
import torch.distributed.checkpoint as dist_cp
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.experimental.distributed_checkpoint as xc
import torch_xla.runtime as xr

CHECKPOINT_DIR = "checkpoint"


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 4))


def train(model, optimizer, mesh, device, steps):
    for step in steps:
        g = torch.Generator().manual_seed(step)
        x, y = torch.randn(16, 16, generator=g), torch.randint(0, 4, (16,), generator=g)
        x, y = x.to(device), y.to(device)
        xs.mark_sharding(x, mesh, ("data", None))
        xs.mark_sharding(y, mesh, ("data",))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.8f}")


def main():
    xr.use_spmd()
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices,), ("data",))
    device = xm.xla_device()

    model = make_model(0).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    train(model, optimizer, mesh, device, range(0, 3))
    state_dict = {"model": model.state_dict(), "optim": optimizer.state_dict()}
    dist_cp.save(
        state_dict=state_dict,
        storage_writer=dist_cp.FileSystemWriter(CHECKPOINT_DIR),
        planner=xc.SPMDSavePlanner(),
    )

    # Resume: other initial weights, replaced by the checkpoint's.
    model = make_model(1).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    xc.prime_optimizer(optimizer)
    state_dict = {"model": model.state_dict(), "optim": optimizer.state_dict()}
    dist_cp.load(
        state_dict=state_dict,
        storage_reader=dist_cp.FileSystemReader(CHECKPOINT_DIR),
        planner=xc.SPMDLoadPlanner(),
    )
    model.load_state_dict(state_dict["model"])
    optimizer.load_state_dict(state_dict["optim"])
    train(model, optimizer, mesh, device, range(3, 6))
    checksum = sum(p.double().sum().item() for p in model.parameters())
    print(f"checksum {checksum:.6f}")


if __name__ == "__main__":
    main()
