"""An unused torch_xla import that is shadowed by a local object named `xm`."""


class Recorder:
    def mark_step(self):
        print("recorded")


def shadowed_after_import():
    xm = Recorder()
    xm.mark_step()
    return xm


shadowed_after_import()
