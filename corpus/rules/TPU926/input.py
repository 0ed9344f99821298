# TPU926 spmd-unlaunched: an SPMD program that no launch script of the run starts is reported
# at its `use_spmd()` (and converted there by TPU216); nothing else is.
import torch_xla.runtime as xr


def main():
    xr.use_spmd()
    print(xr.is_spmd())


if __name__ == "__main__":
    main()
