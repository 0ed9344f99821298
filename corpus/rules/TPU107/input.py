# TPU107 xla-save
import torch
import torch_xla.core.xla_model as xm

model = torch.nn.Linear(2, 2)
xm.save(model.state_dict(), "/tmp/model.pt")
xm.save(model.state_dict(), "/tmp/global.pt", global_master=True)
xm.save(model.state_dict(), "/tmp/nosync.pt", sync=False)
xm.save(model.state_dict(), "/tmp/every.pt", master_only=False)  # every process writes: reported
ok = xm.save(model.state_dict(), "/tmp/model.pt")  # result used: reported


def checkpoint(rank):
    if xm.is_master_ordinal():  # only the master takes this branch: no barrier inside it
        xm.save(model.state_dict(), "/tmp/master.pt")
        xm.save(model.state_dict(), "/tmp/global_master.pt", global_master=True)  # the global one of them
    if rank == 0:
        xm.save(model.state_dict(), "/tmp/rank0.pt")
    if xm.get_local_ordinal() == 0:  # this host's master: the save does not test it again
        xm.save(model.state_dict(), "/tmp/local.pt")
    if xm.is_master_ordinal(local=False):  # the global master, also its host's local master
        xm.save(model.state_dict(), "/tmp/first.pt")
        xm.save(model.state_dict(), "/tmp/first_global.pt", global_master=True)
