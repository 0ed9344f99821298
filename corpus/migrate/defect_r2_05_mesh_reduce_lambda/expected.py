"""Evaluation across replicas: each replica scores its shard, xm.mesh_reduce combines the
scores with small lambdas (the usual form in torch_xla evaluation scripts)."""
import os
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _mp_fn(index, num_cores):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 3).to(device)
    data = torch.randn(64, 8)
    labels = torch.randint(0, 3, (64,))
    shard = slice(dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0")), None, dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1")))
    with torch.no_grad():
        preds = model(data[shard].to(device)).argmax(dim=1).cpu()
    correct = int((preds == labels[shard]).sum())
    seen = len(preds)
    gathered = [(correct, seen)] * (dist.get_world_size() if dist.is_initialized() else 1)
    if dist.is_initialized():
        dist.all_gather_object(gathered, gathered[0])
    totals = (lambda pairs: tuple(map(sum, zip(*pairs))))(gathered)
    gathered = [correct] * (dist.get_world_size() if dist.is_initialized() else 1)
    if dist.is_initialized():
        dist.all_gather_object(gathered, gathered[0])
    first = (lambda xs: xs[0])(gathered)
    gathered = [correct / seen] * (dist.get_world_size() if dist.is_initialized() else 1)
    if dist.is_initialized():
        dist.all_gather_object(gathered, gathered[0])
    best = max(gathered)
    print(f"rank {dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))} of {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))} accuracy={totals[0] / totals[1]:.6f} first={first} best={best:.6f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=1)
    args = parser.parse_args()
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=args.num_cores)
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.start_processes(_mp_fn, args=(args.num_cores,), nprocs=nprocs, start_method="fork")
