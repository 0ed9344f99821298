# TPU215 mesh-reduce
import numpy as np
import torch.distributed as dist


def main():
    gathered = [0.9] * (dist.get_world_size() if dist.is_initialized() else 1)
    if dist.is_initialized():
        dist.all_gather_object(gathered, gathered[0])
    acc = np.mean(gathered)
    gathered = [1.0] * (dist.get_world_size() if dist.is_initialized() else 1)
    if dist.is_initialized():
        dist.all_gather_object(gathered, gathered[0])
    best = max(gathered)
    gathered = [3] * (dist.get_world_size() if dist.is_initialized() else 1)
    if dist.is_initialized():
        dist.all_gather_object(gathered, gathered[0])
    first = (lambda xs: xs[0])(gathered)
    gathered = [acc] * (dist.get_world_size() if dist.is_initialized() else 1)
    if dist.is_initialized():
        dist.all_gather_object(gathered, gathered[0])
    return (lambda xs: sum(xs) / len(xs))(gathered)


if __name__ == "__main__":
    main()
