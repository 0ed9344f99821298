"""Single-process training with torch_xla's test_utils logging, the way the
torch_xla test scripts write TensorBoard summaries: a writer from --logdir (None
by default, so no writer and nothing written), scalars each step, the writer
closed at the end, and the final weights saved with xm.save.
"""
import time
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def close_summary_writer(summary_writer):
    """Flush and close a TensorBoard writer (None: nothing)."""
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()


def get_summary_writer(logdir):
    """A TensorBoard writer for `logdir`, or None when no directory is given."""
    if not logdir:
        return None
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=logdir)
    writer.add_scalar('TensorboardStartTimestamp', time.time(), 0)
    return writer


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


def write_to_summary(summary_writer, global_step=None, dict_to_write=None, write_xla_metrics=False):
    """Write scalars to a TensorBoard writer (None: nothing); there are no XLA metrics to add."""
    if summary_writer is None:
        return
    for name, value in (dict_to_write or {}).items():
        summary_writer.add_scalar(name, value, global_step)


parser = argparse.ArgumentParser()
parser.add_argument('--logdir', type=str, default=None,
                    help='TensorBoard directory; no summaries when unset')
parser.add_argument('--num_steps', type=int, default=4)
parser.add_argument('--batch_size', type=int, default=16)
parser.add_argument('--lr', type=float, default=0.05)
flags = parser.parse_args()


class MLP(nn.Module):
    def __init__(self, d_in=12, d_hidden=32, n_out=3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, n_out)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    torch.manual_seed(2024)
    dev = torch.device("tpu:0")
    # synthetic regression-like classification data, made on the CPU
    x_all = torch.randn(flags.num_steps * flags.batch_size, 12)
    y_all = (x_all[:, :3].sum(dim=1) > 0).long() + (x_all[:, 3] > 1).long()

    model = MLP().to(dev)
    optimizer = torch.optim.Adam(model.parameters(), lr=flags.lr)
    writer = get_summary_writer(flags.logdir)

    model.train()
    for step in range(flags.num_steps):
        lo, hi = step * flags.batch_size, (step + 1) * flags.batch_size
        data, target = x_all[lo:hi].to(dev), y_all[lo:hi].to(dev)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
        print(f'step {step} loss={loss_value:.6f}')
        write_to_summary(
            writer,
            step,
            dict_to_write={'Loss/train': loss_value},
            write_xla_metrics=False)

    model.eval()
    with torch.no_grad():
        acc = (model(x_all.to(dev)).argmax(dim=1) == y_all.to(dev)).float().mean()
    write_to_summary(writer, flags.num_steps,
                                dict_to_write={'Accuracy/train': acc.item()})
    print(f'train accuracy={acc.item():.6f}')
    close_summary_writer(writer)

    if dist.get_node_local_rank(fallback_rank=0) == 0:
        torchtpu_save(model.state_dict(), 'model.pt')
    if dist.is_initialized():
        dist.barrier()
    print('saved model.pt')


if __name__ == '__main__':
    main()
