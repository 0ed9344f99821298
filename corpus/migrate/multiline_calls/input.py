import sys

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr

NPROCS = int(sys.argv[1]) if len(sys.argv) > 1 else 1  # 8 on a v5p-8


def worker(
    index,
    config,
):
    device = xm.xla_device(
    )
    loss = torch.tensor(1.0, device=device)
    loss = xm.all_reduce(
        xm.REDUCE_SUM,
        loss,
        scale=1.0 / xr.world_size(),
    )
    xm.mark_step(
        wait=True,
    )
    xm.master_print(
        "loss:",
        loss.item(),
        "config:", config,
    )
    xm.rendezvous(
        "done",  # everybody waits here
    )


if __name__ == "__main__":
    xmp.spawn(
        worker,
        args=({"lr": 0.1},),
        nprocs=NPROCS,
        start_method="spawn",
    )
