# TPU204 is-master-ordinal
import torch_xla.core.xla_model as xm

if xm.is_master_ordinal():
    print("local master")
if xm.is_master_ordinal(local=False):
    print("global master")
flag = not xm.is_master_ordinal(local=False)


class Node:
    def is_master_ordinal(self):
        return True


if Node().is_master_ordinal():  # not torch_xla: untouched
    print("node")
