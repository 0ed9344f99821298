import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_loader(batch_size):
    ds = TensorDataset(torch.randn(256, 64), torch.randn(256, 1))
    sampler = DistributedSampler(ds, num_replicas=xr.world_size(), rank=xr.global_ordinal())
    return DataLoader(ds, batch_size=batch_size, sampler=sampler, drop_last=True)


def train_fn(rank):
    torch.manual_seed(0)  # weights and data drawn on the CPU
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = pl.MpDeviceLoader(build_loader(32), device)

    for epoch in range(2):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            xm.optimizer_step(optimizer)
        xm.master_print("epoch", epoch, "loss", f"{loss.item():.6f}")
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} done")


if __name__ == "__main__":
    xmp.spawn(train_fn, args=())
