import os
import torch
import torch.distributed as dist


def torchtpu_optimizer_step(optimizer):
	"""Average the gradients over the process group (if any), then `optimizer.step()`."""
	if dist.is_initialized():
		for group in optimizer.param_groups:
			for param in group["params"]:
				if param.grad is not None:
					dist.all_reduce(param.grad)
					param.grad /= dist.get_world_size()
	return optimizer.step()


def torchtpu_rank():
	"""This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
	if dist.is_initialized():
		return dist.get_rank()
	return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
	"""`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
	if torchtpu_rank() == 0:
		print(*args, **kwargs)


class Trainer:
	def __init__(self, model):
		self.device = torch.device("tpu:0")
		self.model = model.to(self.device)
		self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)

	def step(self, x):
		self.opt.zero_grad()
		loss = self.model(x.to(self.device)).sum()
		loss.backward()
		torchtpu_optimizer_step(self.opt)
		return loss

	def fit(self, batches):
		for b in batches:
			loss = self.step(b)
			if dist.get_node_local_rank(fallback_rank=0) == 0:
				torchtpu_rank0_print(loss.item())


if __name__ == "__main__":
	torch.manual_seed(0)
	trainer = Trainer(torch.nn.Linear(8, 1))
	trainer.fit([torch.randn(4, 8) for _ in range(3)])
