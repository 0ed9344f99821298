"""Training helpers shared by the scripts and the notebook."""
from .engine import train_one_epoch, evaluate

__all__ = ["train_one_epoch", "evaluate"]
