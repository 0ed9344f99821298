import torch
import torch_xla.core.xla_model as xm
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(
    index,
    config,
):
    dist.init_process_group("tpu_dist", rank=index, world_size=8)
    device = torch.device("tpu")
    loss = torch.tensor(1.0, device=device)
    loss = xm.all_reduce(
        xm.REDUCE_SUM,
        loss,
        scale=1.0 / (dist.get_world_size() if dist.is_initialized() else 1),
    )
    torch.accelerator.synchronize()
    if not dist.is_initialized() or dist.get_rank() == 0:
        print("loss:", loss.item(), "config:", config)
    dist.barrier()  # everybody waits here


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=8)
    mp.spawn(worker, args=({"lr": 0.1},), nprocs=8, start_method="spawn")
