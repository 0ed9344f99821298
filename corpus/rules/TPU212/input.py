# TPU212 spawn
import torch_xla.distributed.xla_multiprocessing as xmp


def fn(index, cfg):
    print(index, cfg)


def gn(index):
    print(index)


if __name__ == "__main__":
    xmp.spawn(fn, args=({"a": 1},), nprocs=4)
    xmp.spawn(gn, nprocs=8, start_method="fork")
    xmp.spawn(gn, args=())  # no nprocs: reported
