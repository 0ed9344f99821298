# Evaluation utilities in the style of an HF-integrated library: TPU support is optional and the
# distributed pieces only run when torch_xla is there.
import torch, torch.distributed as dist
from transformers.utils import is_torch_xla_available

if is_torch_xla_available():
    import torch_xla.core.xla_model as xm
    import torch_xla.runtime as xr

    _XLA_AVAILABLE = True
else:
    _XLA_AVAILABLE = False


def wait_for_everyone(tag="sync"):
    """Block until every process reaches this point."""
    if is_torch_xla_available():
        xm.rendezvous(tag)
    elif dist.is_available() and dist.is_initialized():
        dist.barrier()


def gather_predictions(preds):
    """Concatenate the predictions of all processes along dim 0."""
    if _XLA_AVAILABLE:
        return xm.all_gather(preds, dim=0)
    if dist.is_available() and dist.is_initialized():
        out = [torch.zeros_like(preds) for _ in range(dist.get_world_size())]
        dist.all_gather(out, preds)
        return torch.cat(out, dim=0)
    return preds


def process_index():
    if _XLA_AVAILABLE:
        return xr.global_ordinal()
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def evaluate(model, batches, device):
    correct, total = 0, 0
    all_preds = []
    with torch.no_grad():
        for x, y in batches:
            logits = model(x.to(device))
            preds = logits.argmax(dim=-1)
            preds = gather_predictions(preds)
            labels = gather_predictions(y.to(device))
            correct += (preds == labels).sum().item()
            total += labels.numel()
            all_preds.append(preds.cpu())
    wait_for_everyone("eval_done")
    return correct / total, torch.cat(all_preds)


if __name__ == "__main__":
    device = torch.device("tpu:0") if _XLA_AVAILABLE else torch.device("cpu")
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    model = model.to(device)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(4, 5, generator=g), torch.randint(0, 3, (4,), generator=g)) for _ in range(3)]
    acc, preds = evaluate(model, batches, device)
    print(f"process {process_index()}: accuracy={acc:.6f} preds={preds.tolist()}")
