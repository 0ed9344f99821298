# TPU208 all-gather
import torch
import torch_xla.core.xla_model as xm


def main():
    x = torch.ones(2, 3)
    a = xm.all_gather(x)
    b = xm.all_gather(x, dim=1)
    c = xm.all_gather(x, dim=0, groups=[[0, 1], [2, 3]])  # groups: reported
    parts = [x, x * 2]
    d = xm.all_gather(parts)  # a list held in a name: one gather per tensor


if __name__ == "__main__":  # a program: one process unless it creates a group
    main()
