"""A script that joins torch_xla's "xla" process group and is started with plain `python`."""
import os
import torch
import torch.distributed as dist


def main():
    if not dist.is_initialized():
        if "RANK" not in os.environ:
            # started with plain `python`: a job of one process, set up as TorchTPU's launcher would
            torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=1)
            os.environ.setdefault("MASTER_ADDR", "localhost")
            os.environ.setdefault("MASTER_PORT", "29500")
        dist.init_process_group("tpu_dist", rank=int(os.environ.get("RANK", "0")), world_size=int(os.environ.get("WORLD_SIZE", "1")))
    device = torch.device("tpu:0")
    t = torch.arange(4, dtype=torch.float32).to(device)
    dist.all_reduce(t)
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} total={t.sum().item():.6f}")


if __name__ == "__main__":
    main()
