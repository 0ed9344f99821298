"""Only the master process logs the summary and writes the marker the job scheduler waits for."""
import os
import argparse

import torch, torch.distributed as dist
import torch.nn as nn
import torch.multiprocessing as mp


def _mp_fn(index, args):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = nn.Linear(3, 1).to(device)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(device)
    out = model(x)
    print(f"rank {dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))} of {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))} out_sum={out.sum().item():.6f}", flush=True)

    if dist.get_node_local_rank(fallback_rank=0) == 0:  # local=True by default: one per host
        with open("marker.txt", "x") as f:  # "x": a second writer (or a stale marker) is an error
            f.write(f"done world={dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))}\n")
        print(f"master wrote marker.txt (world {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))})", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1)
    args = parser.parse_args()
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=args.nprocs)
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(_mp_fn, args=(args,), nprocs=nprocs)
