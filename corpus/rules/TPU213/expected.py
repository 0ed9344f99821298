# TPU213 launch
import os
import torch_xla
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def fn(index):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    print(index)


if __name__ == "__main__":
    if dist.is_torchelastic_launched():
        # torchrun started this process: run the worker in it, as torch_xla.launch did
        os.environ.setdefault("NODE_RANK", os.environ.get("GROUP_RANK", "0"))
        fn(int(os.environ["LOCAL_RANK"]))
    else:
        torch.tpu.distributed.set_tpu_launch_env()
        # one process per chip the launcher set up on this host (every attached chip)
        nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
        # torchrun's rendezvous variables, which torch.multiprocessing does not set
        os.environ.setdefault("MASTER_ADDR", "localhost")
        os.environ.setdefault("MASTER_PORT", "29500")
        os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
        os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
        mp.spawn(fn, args=(), nprocs=nprocs)  # every attached chip, or in place under torchrun
    torch_xla.launch(fn, args=(), debug_single_process=True)  # one process, no group: reported
