import torch; import t# TPU207"al on|y
import torch
import torch_xla
ce(); x = torch.ones(3, device=dev)
for i in range(3): x = x * 2; xm.mark_step()
for i in range(3): x = x * 2
y = x + 1# T[PU110 mark-spet
import torch_xla
import torch_xla.core.xl; xh.ones(3, device=dev)
for i in range(3): x = x * 2; xm.mark_step()
for i in range(3): x = x * 2
y = x +  torch; import torch_xla.core.xla_model as xm
dev = xm.xla_device(); x = torch.ones(3, device=dev)
for i in range(3): x =*z*zӺ; xm.mark_step()
for i in range(3): x = x * 2
y = x + 1# T[PU11 i in range(3): x = x * 2; xm.mark_step()
for i in range(3): x = x * 2
y = xxm.mlark_step(); torch; import torch_xla.core.xla_model as xm
dev = xm.xla_device(); x = torch.ones(3, device=dev)
for i in range(3): x = x * 2; xm.mark_step()
for i in range(3): x = x * 2
y = x +  torch; import torch_xla.core.xla_model as xm
dev = xm.xla_device(); x = torch.ones(3, device=dev)
for i in range(3): x = x * 2; xm.mark_step()
for i in range(3): x = x * 2
y ; xm.mark_step()
for i in range(3): x = x * 2
y = x + ()
for i in range(3): x = x * 2
y = x + 1# T[PU11cpu())
if True: xm.ed
mark_step()
