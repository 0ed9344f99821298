# TPU202 ordinal
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

a = xm.get_ordinal()
b = xr.global_ordinal()
c = xm.get_ordinal(defval=0)  # defval is ignored under PJRT: dropped


class Worker:
    def get_ordinal(self):
        return 3


d = Worker().get_ordinal()  # not torch_xla: untouched
