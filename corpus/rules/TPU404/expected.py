# TPU404 xla-test-utils: the helpers the file calls are defined in it; the rest is reported
import datetime
import multiprocessing
import time
import unittest

import torch_xla.test.test_utils as test_utils
import torch.distributed as dist


def get_summary_writer(logdir):
    """A TensorBoard writer for `logdir`, or None when no directory is given."""
    if not logdir:
        return None
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=logdir)
    writer.add_scalar("TensorboardStartTimestamp", time.time(), 0)
    return writer


def mp_test(func):
    """Run a test in a process of its own, as torch_xla's `test_utils.mp_test` did."""

    def wrapper(*args, **kwargs):
        proc = multiprocessing.Process(target=func, args=args, kwargs=kwargs)
        proc.start()
        proc.join()
        if isinstance(args[0], unittest.TestCase):
            args[0].assertEqual(proc.exitcode, 0)
        return proc.exitcode

    return wrapper


def now(format="%H:%M:%S"):
    """The local time as text, as torch_xla's `test_utils.now` gave it."""
    return datetime.datetime.now().strftime(format)


def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    """One training log line, as torch_xla's `test_utils.print_training_update` printed it."""
    rank = dist.get_rank() if dist.is_initialized() else 0
    fields = ["Training", f"Device={device}/{rank}"]
    if epoch is not None:
        fields.append(f"Epoch={epoch}")
    fields += [f"Step={step}", f"Loss={loss:.5f}", f"Rate={rate:.2f}", f"GlobalRate={global_rate:.2f}"]
    fields.append(f"Time={datetime.datetime.now():%H:%M:%S}")
    print("|", " ".join(fields), flush=True)
    if summary_writer is not None:
        summary_writer.add_scalar("examples/sec", rate)
        summary_writer.add_scalar("average_examples/sec", global_rate)


writer = get_summary_writer("/tmp/logs")
print_training_update(device, step, loss.item(), tracker.rate(), tracker.global_rate())
stamp = now()
day = now("%Y-%m-%d")


class StepTest(unittest.TestCase):
    @mp_test  # the test runs in a process of its own
    def test_step(self):
        self.assertTrue(True)


isolated = test_utils.mp_test(lambda: None)  # called, not a decorator: reported
