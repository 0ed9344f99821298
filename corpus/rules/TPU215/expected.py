# TPU215 mesh-reduce
import numpy as np
import torch.distributed as dist


def torchtpu_mesh_reduce(data, reduce_fn):
    """`reduce_fn` of the list of every rank's `data` (`[data]` in a single process)."""
    if not dist.is_initialized():
        return reduce_fn([data])
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, data)
    return reduce_fn(gathered)


def main():
    acc = torchtpu_mesh_reduce(0.9, np.mean)
    best = torchtpu_mesh_reduce(1.0, max)
    first = torchtpu_mesh_reduce(3, lambda xs: xs[0])
    return torchtpu_mesh_reduce(acc, lambda xs: sum(xs) / len(xs))


if __name__ == "__main__":
    main()
