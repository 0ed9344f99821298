import torch
import torch_xla.core.xla_model as xm
import torch.distributed as dist


class Trainer:
	def __init__(self, model):
		self.device = torch.device("tpu")
		self.model = model.to(self.device)
		self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)

	def step(self, x):
		self.opt.zero_grad()
		loss = self.model(x.to(self.device)).sum()
		loss.backward()
		xm.optimizer_step(self.opt, barrier=True)
		return loss

	def fit(self, batches):
		for b in batches:
			loss = self.step(b)
			if dist.get_node_local_rank(fallback_rank=0) == 0:
				if not dist.is_initialized() or dist.get_rank() == 0:
					print(loss.item())
