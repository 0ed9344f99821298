import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _run(index):
    dist.init_process_group("tpu_dist", rank=index, world_size=8)
    device = torch.device("tpu")
    x = torch.randn(3, 3).to(device)
    y = x @ x.T
    if not dist.is_initialized() or dist.get_rank() == 0:
        print(y.cpu())


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=8)
    mp.spawn(_run, args=(), nprocs=8)
