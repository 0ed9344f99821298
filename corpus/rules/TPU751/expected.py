import logging

import torch

log = logging.getLogger(__name__)


def train(model, loader, optimizer, loss_fn, scaler):
    for epoch in range(2):
        running = torch.zeros((), device="tpu")
        for step, (x, y) in enumerate(loader):
            x, y = x.to("tpu"), y.to("tpu")
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            print(loss)  # reported: prints a tensor
            log.info("loss %.4f", loss.item())  # reported once, at .item()
            preds = model(x).argmax(-1).cpu().numpy()  # reported once, at the outer call
            if loss < 0.01:  # reported: a branch on the loss
                break
            total = float(loss)  # reported
            running += loss.detach()  # stays on the chip: not reported
            if loss.shape != ():  # shape is known without the value: not reported
                pass
            if step % 50 == 0:
                print(f"step {step}: {running.item() / 50:.4f}")  # every 50 steps: not reported
        print("epoch", epoch, loss.item())  # once per epoch, outside the step: not reported


def evaluate(model, loader):
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(-1) == y).sum().item()  # no backward(): not a training step
    return correct


def train_with_scaler(model, loader, optimizer, loss_fn, scaler):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        print(f"loss {loss}")  # reported: the scaled loss is still `loss`


class Trainer:
    def train_step(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss

    def fit(self, loader):
        for x, y in loader:
            loss = self.train_step(x, y)  # a step function: this loop is the training loop
            self.history.append(loss.item())  # reported
