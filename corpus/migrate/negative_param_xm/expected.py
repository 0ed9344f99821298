"""A state machine whose `xm` argument has its own mark_step(); nothing to do with torch_xla."""


class Recorder:
    def __init__(self):
        self.marks = []

    def mark_step(self, wait=False):
        self.marks.append(wait)

    def xla_device(self):
        return "virtual"


def advance(xm, n):
    # `xm` is a Recorder here
    for _ in range(n):
        xm.mark_step()
    return xm.xla_device()


def local_variable():
    xm = Recorder()
    xm.mark_step(wait=True)
    return xm.marks


print(advance(Recorder(), 3), local_variable())
