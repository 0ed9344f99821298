# TPU231 spmd-global-loss: in a file that shards its batch, the loss after `backward` becomes the
# mean over the processes; a loss that is not a bare name is reported
import torch
import torch_xla.distributed.spmd as xs


def train(model, mesh, batches, optimizer, scaler):
    for x, y in batches:
        xs.mark_sharding(x, mesh, ("data", None))
        xs.mark_sharding(y, mesh, ("data",))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(retain_graph=False)  # keeps its comment
        print(loss.item())
        scaler.scale(loss).backward()
        optimizer.step()
