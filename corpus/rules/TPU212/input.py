# TPU212 spawn
import torch.distributed as dist
import torch_xla.distributed.xla_multiprocessing as xmp
from trainer import train_worker


def fn(index, cfg):
    print(index, cfg)


def gn(index):
    """Worker with a docstring."""
    print(index)


def own_group(index):
    dist.init_process_group("gloo")  # the worker's own group: the launcher creates none
    print(index)


def launch(n):
    def nested(index, n):
        print(index, n)

    xmp.spawn(nested, args=(n,), nprocs=n)


if __name__ == "__main__":
    xmp.spawn(fn, args=({"a": 1},), nprocs=4)
    xmp.spawn(gn, nprocs=8, start_method="fork")
    xmp.spawn(gn, args=())  # no nprocs: every attached chip
    xmp.spawn(gn, nprocs=None)  # every attached chip, as torch_xla did
    xmp.spawn(gn, nprocs=len(range(4)))  # computed by a call: evaluated once, may be None
    xmp.spawn(own_group, nprocs=2)
    xmp.spawn(train_worker, nprocs=4)  # worker defined elsewhere: reported
    xmp.spawn(lambda i: print(i), nprocs=2)  # not a function of this file: reported
