"""MoE expert layer: grouped matmul with torch_xla's Pallas kernel on TPU, a reference loop elsewhere."""
import os
import argparse

import torch, torch.distributed as dist


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def my_gmm(lhs, rhs, group_sizes):
    # lhs: [tokens, k], rhs: [groups, k, n], tokens sorted by group
    out, start = [], 0
    for g, size in enumerate(group_sizes.tolist()):
        out.append(lhs[start:start + size] @ rhs[g])
        start += size
    return torch.cat(out)


def expert_forward(x, weights, group_sizes, use_pallas):
    from torch_xla.experimental.custom_kernel import gmm

    if not use_pallas:
        gmm = my_gmm
    return gmm(x, weights, group_sizes)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pallas", action="store_true", help="use the Pallas kernel (TPU only)")
    args = parser.parse_args()

    device = torch.device("tpu:0")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 4, generator=g)
    w = torch.randn(3, 4, 5, generator=g)
    group_sizes = torch.tensor([1, 2, 3], dtype=torch.int32)
    y = expert_forward(x.to(device), w.to(device), group_sizes, args.pallas)
    print(f"rank {torchtpu_rank()}: out {tuple(y.shape)} sum={y.sum().item():.6f}")


if __name__ == "__main__":
    main()
