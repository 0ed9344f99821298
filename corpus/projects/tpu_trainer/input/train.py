"""Train the classifier on every TPU core of this host."""
import argparse
import os

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from tpu_trainer import evaluate, train_one_epoch
from tpu_trainer.model import Classifier

os.environ.setdefault("PJRT_DEVICE", "TPU")


def _mp_fn(index, args):
    torch.manual_seed(0)
    device = xm.xla_device()
    data = TensorDataset(torch.randint(0, 1000, (256, 16)), torch.randint(0, 4, (256,)))
    sampler = DistributedSampler(data, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=False)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    model = Classifier().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, device)
        accuracy = evaluate(model, loader, device)
        xm.master_print(f"epoch {epoch}: accuracy {accuracy:.6f}")
    checksum = sum(p.double().sum().item() for p in model.parameters())
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} checksum={checksum:.6f}")
    xm.save(model.state_dict(), args.output)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--num-cores", type=int, default=8)
    parser.add_argument("--output", default="classifier.pt")
    args = parser.parse_args()
    xmp.spawn(_mp_fn, args=(args,), nprocs=args.num_cores)
