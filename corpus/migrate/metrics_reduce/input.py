"""Evaluation helpers that aggregate metrics across TPU cores."""
import numpy as np
import torch
import torch_xla.core.xla_model as xm


def reduce_mean(t):
    # sum over replicas, then divide by the replica count
    return xm.all_reduce(xm.REDUCE_SUM, t, scale=1.0 / xm.xrt_world_size())


def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)
    seen = torch.zeros((), device=device)
    with torch.no_grad():
        for data, target in loader:
            pred = model(data).argmax(dim=1)
            correct += (pred == target).sum()
            seen += target.numel()
    correct = xm.all_reduce(xm.REDUCE_SUM, correct)
    seen = xm.all_reduce("sum", seen)
    accuracy = (correct / seen).item()
    # gather python floats from every core and average them on the host
    mean_acc = xm.mesh_reduce("eval_acc", accuracy, np.mean)
    xm.master_print(f"accuracy={mean_acc:.4f}")
    return mean_acc


def gather_predictions(preds):
    all_preds = xm.all_gather(preds, dim=0)
    max_loss = xm.all_reduce(xm.REDUCE_MAX, preds.float().max())
    xm.rendezvous("gathered")
    return all_preds, max_loss


def log_once(msg):
    if xm.is_master_ordinal(local=False):
        print(msg)
    if xm.get_local_ordinal() == 0:
        print("local leader:", msg)


if __name__ == "__main__":
    # (reduce_mean is not called: xm.xrt_world_size was removed in torch_xla 2.9)
    torch.manual_seed(0)
    device = xm.xla_device()
    model = torch.nn.Linear(8, 3).to(device)
    batches = [(torch.randn(16, 8).to(device), torch.randint(0, 3, (16,)).to(device)) for _ in range(3)]
    evaluate(model, batches, device)
    preds, max_loss = gather_predictions(torch.arange(6).to(device))
    print(tuple(preds.shape), f"{max_loss.item():.6f}")
    log_once("done")
