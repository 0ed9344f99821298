import torch_xla.distributed.xla_multiprocessing as xmp


def fn(index, cfg):
    print(index, cfg)


if __name__ == "__main__":
    xmp.spawn(fn, arg:=({"a": 1},), nprocs=4)
