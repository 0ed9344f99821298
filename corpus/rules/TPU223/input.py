# TPU223 xla-distributed-checkpoint: the SPMD planners become PyTorch's default ones, and
# prime_optimizer and CheckpointManager helpers; a manager built from unpacked settings is reported
from torch_xla.experimental.distributed_checkpoint import CheckpointManager

chkpt = CheckpointManager("gs://bucket/ckpt", save_interval=100)
import torch.distributed.checkpoint as dist_cp
import torch_xla.experimental.distributed_checkpoint as xc

dist_cp.save(state_dict=state_dict, storage_writer=dist_cp.FileSystemWriter(path), planner=xc.SPMDSavePlanner())
xc.prime_optimizer(optimizer)
dist_cp.load(state_dict=state_dict, storage_reader=dist_cp.FileSystemReader(path), planner=xc.SPMDLoadPlanner())
manager = xc.CheckpointManager(**settings)
