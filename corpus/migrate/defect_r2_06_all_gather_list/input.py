"""Issue 19, defect 6: `xm.all_gather` on a list gathers each tensor and returns a list.

Converted to one gather per tensor: `all_gather_dim` takes a single tensor, so passing it the
list would raise as soon as a process group exists. (torch_xla wants `pin_layout=False` for a list.)
"""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def _mp_fn(index):
    device = xm.xla_device()
    rank, world = xr.global_ordinal(), xr.world_size()
    preds = torch.tensor([float(rank), 10.0 + rank]).to(device)
    counts = torch.tensor([rank + 1.0]).to(device)
    gathered_preds, gathered_counts = xm.all_gather([preds, counts], dim=0, pin_layout=False)
    print(f"rank {rank} of {world} preds={gathered_preds.cpu().tolist()}")
    print(f"total={gathered_counts.sum().item()}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn)
