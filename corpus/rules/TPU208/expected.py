# TPU208 all-gather
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm


def main():
    x = torch.ones(2, 3)
    a = torch.tpu.ops.all_gather_dim(x, 0) if dist.is_initialized() else x
    b = torch.tpu.ops.all_gather_dim(x, 1) if dist.is_initialized() else x
    c = xm.all_gather(x, dim=0, groups=[[0, 1], [2, 3]])  # groups: reported
    parts = [x, x * 2]
    d = [torch.tpu.ops.all_gather_dim(tensor, 0) for tensor in parts] if dist.is_initialized() else parts  # a list held in a name: one gather per tensor


if __name__ == "__main__":  # a program: one process unless it creates a group
    main()
