"""Issue 19, defect 6: `xm.all_gather` on a list gathers each tensor and returns a list.

Converted to one gather per tensor: `all_gather_dim` takes a single tensor, so passing it the
list would raise as soon as a process group exists. (torch_xla wants `pin_layout=False` for a list.)
"""
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _mp_fn(index):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    rank, world = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0")), dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))
    preds = torch.tensor([float(rank), 10.0 + rank]).to(device)
    counts = torch.tensor([rank + 1.0]).to(device)
    gathered_preds, gathered_counts = [torch.tpu.ops.all_gather_dim(tensor, 0) for tensor in [preds, counts]] if dist.is_initialized() else [preds, counts]
    print(f"rank {rank} of {world} preds={gathered_preds.cpu().tolist()}")
    print(f"total={gathered_counts.sum().item()}")


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env()
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(_mp_fn, args=(), nprocs=nprocs)
