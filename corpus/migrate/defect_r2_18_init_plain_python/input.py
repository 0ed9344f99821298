"""A script that joins torch_xla's "xla" process group and is started with plain `python`."""
import torch
import torch.distributed as dist
import torch_xla
import torch_xla.distributed.xla_backend  # registers the "xla" backend


def main():
    dist.init_process_group("xla", init_method="xla://")
    device = torch_xla.device()
    t = torch.arange(4, dtype=torch.float32).to(device)
    dist.all_reduce(t)
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} total={t.sum().item():.6f}")


if __name__ == "__main__":
    main()
