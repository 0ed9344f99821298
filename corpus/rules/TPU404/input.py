# TPU404 xla-test-utils: reported only
import torch_xla.test.test_utils as test_utils

writer = test_utils.get_summary_writer("/tmp/logs")
test_utils.print_training_update(device, step, loss.item(), tracker.rate(), tracker.global_rate())
