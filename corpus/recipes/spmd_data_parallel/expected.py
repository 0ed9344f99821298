# The TorchTPU form of input.py that TPU228's explanation gives, written by a person: one process
# per chip (torchrun), each keeping its slice of the same global batch, DDP averaging the
# gradients, the loss averaged over ranks where it is printed. Plain `python` runs it on one chip.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

GLOBAL_BATCH, STEPS = 16, 5

WORLD_SIZE = int(os.environ.get("WORLD_SIZE", "1"))
if WORLD_SIZE > 1:
    dist.init_process_group("tpu_dist")
RANK = dist.get_rank() if WORLD_SIZE > 1 else 0


def shard_batch(t):
    """This process's slice of the global batch: what `mark_sharding(t, mesh, ("data", ...))` gave
    each device. torch_xla padded uneven shards; equal ones keep the gradients exact."""
    if t.shape[0] % WORLD_SIZE:
        raise ValueError(f"global batch {t.shape[0]} is not divisible by {WORLD_SIZE} chips")
    return t.tensor_split(WORLD_SIZE)[RANK]


def batches():
    g = torch.Generator().manual_seed(1234)
    for _ in range(STEPS):
        yield torch.randn(GLOBAL_BATCH, 16, generator=g), torch.randint(0, 4, (GLOBAL_BATCH,), generator=g)


def main():
    device = torch.device("tpu")
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    model = DistributedDataParallel(module) if WORLD_SIZE > 1 else module  # no device_ids
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for step, (data, target) in enumerate(batches()):
        data, target = data.to(device), target.to(device)
        data, target = shard_batch(data), shard_batch(target)  # every tensor of the batch
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        optimizer.step()
        global_loss = loss.detach().clone()
        if WORLD_SIZE > 1:
            dist.all_reduce(global_loss, op=dist.ReduceOp.AVG)  # on every rank
        value = global_loss.item()
        if RANK == 0:
            print(f"step {step} loss {value:.8f}")
    state = {k: v.cpu() for k, v in module.state_dict().items()}  # the module's keys, no "module."
    checksum = sum(v.double().sum().item() for v in state.values())
    if WORLD_SIZE > 1:  # the replicas must agree
        sums = [None] * WORLD_SIZE
        dist.all_gather_object(sums, checksum)
        assert len(set(sums)) == 1, f"replicas differ: {sums}"
    if RANK == 0:
        print("checksum", f"{checksum:.10f}")
        torch.save(state, "final.pt")
    if WORLD_SIZE > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
