# TPU223 xla-distributed-checkpoint: the SPMD planners become PyTorch's default ones, and
# prime_optimizer and CheckpointManager helpers; a manager built from unpacked settings is reported
import fsspec.core
import torch
import torch.distributed as dist
import torch.distributed.checkpoint


class torchtpu_checkpoint_manager:
    """Checkpoints in `path/<step>` with `torch.distributed.checkpoint`, saved every
    `save_interval` steps (or when forced), the newest `max_to_keep` kept (0: all) and older
    ones deleted by rank 0. Steps are the directories holding a finished checkpoint. A local path, or an fsspec URL (`gs://…`,
    with its filesystem package installed). `save_async` saves before it returns, and there
    is no preemption notice on TorchTPU: `reached_preemption` is False."""

    def __init__(self, path, save_interval, max_to_keep=0, process_group=None):
        if save_interval <= 0 or max_to_keep < 0:
            raise ValueError(
                "save_interval must be positive and max_to_keep non-negative"
            )
        self.path = str(path).rstrip("/")
        self.save_interval, self.max_to_keep = save_interval, max_to_keep
        self.group = process_group
        self.fs, self.root = fsspec.core.url_to_fs(self.path)  # fsspec comes with torch
        self.fs.makedirs(self.root, exist_ok=True)
        names = [
            p.rstrip("/").rsplit("/", 1)[-1]
            for p in self.fs.ls(self.root, detail=False)
        ]
        done = [
            int(n)
            for n in names
            if n.isdigit() and self.fs.exists(f"{self.root}/{n}/.metadata")
        ]
        self.steps = sorted(done)

    def _rank(self):
        return dist.get_rank(self.group) if dist.is_initialized() else 0

    def should_save(self, step):
        return step % self.save_interval == 0

    def save(self, step, state_dict, force=False):
        if not (force or self.should_save(step)):
            return False
        if self._rank() == 0 and self.fs.exists(f"{self.root}/{step}"):
            # Before save's collective planning.
            self.fs.rm(f"{self.root}/{step}", recursive=True)
        torch.distributed.checkpoint.save(
            state_dict, checkpoint_id=f"{self.path}/{step}", process_group=self.group
        )
        self.steps = sorted(set(self.steps) | {step})
        while self.max_to_keep and len(self.steps) > self.max_to_keep:
            oldest = self.steps.pop(0)
            if self._rank() == 0:
                self.fs.rm(f"{self.root}/{oldest}", recursive=True)
        if dist.is_initialized():
            dist.barrier(self.group)  # every process then lists the same steps
        return True

    def save_async(self, step, state_dict, force=False):
        return self.save(step, state_dict, force)

    def restore(self, step, state_dict):
        if step not in self.steps:
            raise ValueError(
                f"Cannot restore from untracked step {step}. Valid steps are: {self.steps}"
            )
        torch.distributed.checkpoint.load(
            state_dict, checkpoint_id=f"{self.path}/{step}", process_group=self.group
        )

    def all_steps(self):
        return list(self.steps)

    def join(self):
        pass

    def reached_preemption(self, step):
        return False


def torchtpu_prime_optimizer(optimizer):
    """Step `optimizer` once with zero gradients, so its state exists for `dcp.load` to fill
    in place. The step moves the parameters (weight decay): load the checkpoint right after."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.requires_grad:
                param.grad = torch.zeros_like(param)
    optimizer.step()
    return optimizer


chkpt = torchtpu_checkpoint_manager("gs://bucket/ckpt", save_interval=100)
import torch.distributed.checkpoint as dist_cp
import torch_xla.experimental.distributed_checkpoint as xc

dist_cp.save(state_dict=state_dict, storage_writer=dist_cp.FileSystemWriter(path), planner=dist_cp.DefaultSavePlanner())
torchtpu_prime_optimizer(optimizer)
dist_cp.load(state_dict=state_dict, storage_reader=dist_cp.FileSystemReader(path), planner=dist_cp.DefaultLoadPlanner())
manager = xc.CheckpointManager(**settings)
