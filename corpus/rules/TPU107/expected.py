# TPU107 xla-save
import os
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


model = torch.nn.Linear(2, 2)
if dist.get_node_local_rank(fallback_rank=0) == 0:
    torchtpu_save(model.state_dict(), "/tmp/model.pt")
if dist.is_initialized():
    dist.barrier()
if torchtpu_rank() == 0:
    torchtpu_save(model.state_dict(), "/tmp/global.pt")
if dist.is_initialized():
    dist.barrier()
if dist.get_node_local_rank(fallback_rank=0) == 0:
    torchtpu_save(model.state_dict(), "/tmp/nosync.pt")
xm.save(model.state_dict(), "/tmp/every.pt", master_only=False)  # every process writes: reported
ok = xm.save(model.state_dict(), "/tmp/model.pt")  # result used: reported


def checkpoint(rank):
    if dist.get_node_local_rank(fallback_rank=0) == 0:  # only the master takes this branch: no barrier inside it
        torchtpu_save(model.state_dict(), "/tmp/master.pt")
        if torchtpu_rank() == 0:
            torchtpu_save(model.state_dict(), "/tmp/global_master.pt")  # the global one of them
    if rank == 0:
        if dist.get_node_local_rank(fallback_rank=0) == 0:
            torchtpu_save(model.state_dict(), "/tmp/rank0.pt")
    if dist.get_node_local_rank(fallback_rank=0) == 0:  # this host's master: the save does not test it again
        torchtpu_save(model.state_dict(), "/tmp/local.pt")
    if torchtpu_rank() == 0:  # the global master, also its host's local master
        torchtpu_save(model.state_dict(), "/tmp/first.pt")
        torchtpu_save(model.state_dict(), "/tmp/first_global.pt")
