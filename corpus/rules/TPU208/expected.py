# TPU208 all-gather
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm


def torchtpu_all_gather(value, dim=0):
    """`value` (or each tensor of a list) gathered from every rank along `dim`."""
    if not dist.is_initialized():
        return value
    if isinstance(value, list):
        return [torch.tpu.ops.all_gather_dim(t, dim) for t in value]
    return torch.tpu.ops.all_gather_dim(value, dim)


def main():
    x = torch.ones(2, 3)
    a = torchtpu_all_gather(x)
    b = torchtpu_all_gather(x, dim=1)
    c = xm.all_gather(x, dim=0, groups=[[0, 1], [2, 3]])  # groups: reported
    parts = [x, x * 2]
    d = torchtpu_all_gather(parts)  # a list held in a name: one gather per tensor


if __name__ == "__main__":  # a program: one process unless it creates a group
    main()
