# TPU227 spmd-hybrid-mesh: reported only
import torch_xla.distributed.spmd as xs

mesh = xs.HybridMesh(ici_mesh_shape=(1, 4), dcn_mesh_shape=(2, 1), axis_names=("dcn", "fsdp"))
