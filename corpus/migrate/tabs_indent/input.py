import torch
import torch_xla.core.xla_model as xm


class Trainer:
	def __init__(self, model):
		self.device = xm.xla_device()
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
			if xm.is_master_ordinal():
				xm.master_print(loss.item())


if __name__ == "__main__":
	torch.manual_seed(0)
	trainer = Trainer(torch.nn.Linear(8, 1))
	trainer.fit([torch.randn(4, 8) for _ in range(3)])
