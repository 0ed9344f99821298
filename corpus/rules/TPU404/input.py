# TPU404 xla-test-utils: the helpers the file calls are defined in it; the rest is reported
import unittest

import torch_xla.test.test_utils as test_utils

writer = test_utils.get_summary_writer("/tmp/logs")
test_utils.print_training_update(device, step, loss.item(), tracker.rate(), tracker.global_rate())
stamp = test_utils.now()
day = test_utils.now("%Y-%m-%d")


class StepTest(unittest.TestCase):
    @test_utils.mp_test  # the test runs in a process of its own
    def test_step(self):
        self.assertTrue(True)


isolated = test_utils.mp_test(lambda: None)  # called, not a decorator: reported
