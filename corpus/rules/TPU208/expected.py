# TPU208 all-gather
import torch
import torch_xla.core.xla_model as xm
import torch.distributed as dist


def main():
    x = torch.ones(2, 3)
    a = torch.tpu.ops.all_gather_dim(x, 0) if dist.is_initialized() else x
    b = torch.tpu.ops.all_gather_dim(x, 1) if dist.is_initialized() else x
    c = xm.all_gather(x, dim=0, groups=[[0, 1], [2, 3]])  # groups: reported


if __name__ == "__main__":  # a program: one process unless it creates a group
    main()
