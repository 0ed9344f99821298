# TPU206 rendezvous
import torch_xla.core.xla_model as xm
import torch.distributed as dist

dist.barrier()
dist.barrier()
replies = xm.rendezvous("exchange", payload=b"data")  # exchanges a payload: reported
