# TPU000 unmapped-api: names outside the documented API surface (rules/surface/) are reported, never converted
import torch_xla.core.xla_model as xm
import torch_xla.debug.graph_saver as graph_saver
import torch_xla.runtime as xr

xm.set_lowering_context(ctx)  # not on the 2.9 surface: reported
graph_saver.save_tensors_graph(tensors)  # reported

# A torch_xla object xla2tpu cannot follow: reported where it is defined and at each use.
get_rank = getattr(xr, "global_ordinal", None) or xm.get_ordinal
print(get_rank())
