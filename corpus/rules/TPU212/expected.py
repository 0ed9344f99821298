# TPU212 spawn
import torch_xla.distributed.xla_multiprocessing as xmp
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def fn(index, cfg):
    dist.init_process_group("tpu_dist", rank=index, world_size=4)
    print(index, cfg)


def gn(index):
    dist.init_process_group("tpu_dist", rank=index, world_size=8)
    print(index)


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=4)
    mp.spawn(fn, args=({"a": 1},), nprocs=4)
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=8)
    mp.spawn(gn, args=(), nprocs=8, start_method="fork")
    xmp.spawn(gn, args=())  # no nprocs: reported
