"""An unused torch_xla import that is shadowed by a local object named `xm`."""


class Recorder:
    def mark_step(self):
        print("recorded")


def shadowed_after_import():
    import torch_xla.core.xla_model as xm  # noqa: F401 (imported for side effects elsewhere)

    xm = Recorder()
    xm.mark_step()
    return xm


shadowed_after_import()
