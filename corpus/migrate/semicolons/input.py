import torch; import torch_xla.core.xla_model as xm
dev = xm.xla_device(); x = torch.ones(3, device=dev)
for i in range(3): x = x * 2; xm.mark_step()
y = x + 1; xm.mark_step(); print(y.cpu())
if True: xm.mark_step()
