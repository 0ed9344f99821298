import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl", init_method="env://")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    model = DDP(torch.nn.Linear(10, 10).to(device), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.cuda.amp.GradScaler()
    for _ in range(10):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(torch.randn(4, 10, device=device)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    torch.cuda.synchronize()
    model_c = torch.compile(model, backend="inductor")
    if dist.get_rank() == 0:
        print("done", model_c)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
