# The shape of pytorch/xla's examples/data_parallel/train_resnet_spmd_data_parallel.py, small: a
# trainer class whose device loader shards every batch on the "data" axis of a 4-D mesh
# (`input_sharding`), a step closure printing the loss, and a shuffling DataLoader. Only the
# images match the spec's rank; torch_xla left the labels replicated.
import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()


class TrainResNetSpmdDataParallel:
    def __init__(self, batch_size=16, epochs=2):
        self.device = torch_xla.device()
        self.epochs = epochs
        torch.manual_seed(0)
        images, labels = torch.randn(64, 3, 8, 8), torch.randint(0, 10, (64,))
        train_loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(images, labels), batch_size=batch_size, shuffle=True, drop_last=True
        )
        num_devices = xr.global_runtime_device_count()
        mesh_shape = (num_devices, 1, 1, 1)
        mesh = xs.Mesh(np.array(range(num_devices)), mesh_shape, ("data", "dim1", "dim2", "dim3"))
        self.train_device_loader = pl.MpDeviceLoader(
            train_loader, self.device, input_sharding=xs.ShardingSpec(mesh, ("data", None, None, None))
        )
        self.model = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 10)
        ).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        self.loss_fn = nn.CrossEntropyLoss()

    def _train_update(self, epoch, step, loss):
        print(f"epoch {epoch} step {step} loss {loss.item():.7f}")

    def train_loop_fn(self, epoch):
        self.model.train()
        for step, (data, target) in enumerate(self.train_device_loader):
            self.optimizer.zero_grad()
            output = self.model(data)
            loss = self.loss_fn(output, target)
            loss.backward()
            self.optimizer.step()
            xm.add_step_closure(self._train_update, args=(epoch, step, loss))

    def start_training(self):
        for epoch in range(1, self.epochs + 1):
            self.train_loop_fn(epoch)
        xm.wait_device_ops()
        state = {k: v.cpu() for k, v in self.model.state_dict().items()}
        print("checksum", f"{sum(v.double().sum().item() for v in state.values()):.8f}")
        torch.save(state, "final.pt")


if __name__ == "__main__":
    TrainResNetSpmdDataParallel().start_training()
