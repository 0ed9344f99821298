"""Emulator settings, read from the environment at use time (no torch import)."""

import os
import tempfile

# Emulated TPU generations: PCI name, chips -> topology (as in TorchTPU 0.2.0's
# hardware table), HBM bytes per chip.
GENERATIONS = {
    "v4": ("TPU v4", {1: "1,1,1", 2: "1,2,1", 4: "2,2,1", 8: "2,2,2"}, 32 * 1024**3),
    "v5p": ("TPU v5p", {1: "1,1,1", 2: "1,2,1", 4: "2,2,1", 8: "2,2,2"}, 95 * 1024**3),
    "v5e": ("TPU v5e", {1: "1,1,1", 4: "2,2,1", 8: "2,4,1"}, 16 * 1024**3),
    "v6e": ("TPU v6e", {1: "1,1,1", 4: "2,2,1", 8: "2,4,1"}, 32 * 1024**3),
    "v7": ("TPU v7", {2: "1,1,1,2", 4: "1,2,1,2", 8: "2,2,1,2"}, 192 * 1024**3),
}
DEFAULT_GENERATION = "v5p"


def chips():
  """XLA2TPU_EMULATOR_CHIPS: emulated TPU chips on this host (default 1)."""
  raw = os.environ.get("XLA2TPU_EMULATOR_CHIPS", "1").strip() or "1"
  try:
    n = int(raw)
  except ValueError:
    n = 1
  return max(0, n)


def generation():
  g = os.environ.get("XLA2TPU_EMULATOR_GENERATION", DEFAULT_GENERATION).lower()
  g = g.replace("tpu", "").strip(" _-")
  return g if g in GENERATIONS else DEFAULT_GENERATION


def device_name():
  return GENERATIONS[generation()][0]


def topology(world_size=None):
  """Like TorchTPU's hardware.get_tpu_topology on the emulated host."""
  n = chips()
  if n == 0:
    return None
  target = world_size if world_size is not None else n
  table = GENERATIONS[generation()][1]
  if target in table:
    return table[target]
  raise RuntimeError(f"No TPU topology found for count: {target}")


def hbm_bytes():
  return GENERATIONS[generation()][2]


def _session_key():
  try:
    return f"s{os.getsid(0)}"
  except (AttributeError, OSError):
    return f"p{os.getppid()}"


def state_dir():
  """XLA2TPU_EMULATOR_STATE, default <tmp>/xla2tpu-emulator-<uid>-s<session id>.

  Holds one lock file per emulated chip; processes that share it compete for
  the chips like processes on one TPU host.
  """
  d = os.environ.get("XLA2TPU_EMULATOR_STATE")
  if not d:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    d = os.path.join(
        tempfile.gettempdir(), f"xla2tpu-emulator-{uid}-{_session_key()}"
    )
  os.makedirs(d, exist_ok=True)
  return d


def truthy(name, default=False):
  v = os.environ.get(name)
  if v is None:
    return default
  return v.strip().lower() in ("1", "true", "yes", "on", "t", "y")


def data_file(name):
  """A registry file: `xla2tpu run` passes its embedded copy by environment
  variable; from a checkout of the repository, `rules/backends` is used, so
  one table drives `xla2tpu ops check` and the emulator."""
  here = os.path.dirname(os.path.abspath(__file__))
  path = os.path.join(here, os.pardir, os.pardir, os.pardir, "rules", "backends", name)
  if not os.path.isfile(path):
    raise RuntimeError(
        f"xla2tpu emulator: {name} not found; run programs with `xla2tpu run`,"
        " or set XLA2TPU_EMULATOR_REGISTRY / XLA2TPU_EMULATOR_AUTOCAST"
    )
  return os.path.normpath(path)


def registry_path():
  return os.environ.get("XLA2TPU_EMULATOR_REGISTRY") or data_file(
      "torchtpu-0.2.0.tsv"
  )


def autocast_path():
  return os.environ.get("XLA2TPU_EMULATOR_AUTOCAST") or data_file(
      "torchtpu-0.2.0.autocast.txt"
  )
