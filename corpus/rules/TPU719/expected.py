# TPU719 trainer-tied-weights
import transformers
from transformers import Seq2SeqTrainer, Trainer
from trl import SFTTrainer
import functools
import torch


@functools.cache
def torchtpu_trainer(cls):
    """`cls` (a transformers Trainer class) that keeps tied weights tied on TorchTPU.

    Moving a model to the chip gives each module its own copy of a shared parameter (an
    embedding and its LM head), and the Trainer re-ties them itself only on XLA devices.
    """

    class TorchTPUTrainer(cls):
        def _move_model_to_device(self, model, device):
            super()._move_model_to_device(model, device)
            if torch.device(device).type == "tpu" and hasattr(model, "tie_weights"):
                model.tie_weights()

    TorchTPUTrainer.__name__ = cls.__name__
    TorchTPUTrainer.__qualname__ = cls.__qualname__
    return TorchTPUTrainer


class DistillTrainer(torchtpu_trainer(Trainer)):  # a subclass: its base is wrapped
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        return super().compute_loss(model, inputs, return_outputs=return_outputs, **kwargs)


def build(model, args, data):
    plain = torchtpu_trainer(Trainer)(model=model, args=args, train_dataset=data)
    qualified = torchtpu_trainer(transformers.Trainer)(model=model, args=args)
    seq2seq = torchtpu_trainer(Seq2SeqTrainer)(model=model, args=args)
    sft = torchtpu_trainer(SFTTrainer)(model=model, args=args, train_dataset=data)
    assert isinstance(plain, Trainer)  # class tests: untouched
    return plain, qualified, seq2seq, sft, DistillTrainer(model=model, args=args)


def describe(trainer: Trainer) -> str:  # annotations: untouched
    return type(trainer).__name__
