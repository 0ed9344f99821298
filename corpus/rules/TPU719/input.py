# TPU719 trainer-tied-weights
import transformers
from transformers import Seq2SeqTrainer, Trainer
from trl import SFTTrainer


class DistillTrainer(Trainer):  # a subclass: its base is wrapped
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        return super().compute_loss(model, inputs, return_outputs=return_outputs, **kwargs)


def build(model, args, data):
    plain = Trainer(model=model, args=args, train_dataset=data)
    qualified = transformers.Trainer(model=model, args=args)
    seq2seq = Seq2SeqTrainer(model=model, args=args)
    sft = SFTTrainer(model=model, args=args, train_dataset=data)
    assert isinstance(plain, Trainer)  # class tests: untouched
    return plain, qualified, seq2seq, sft, DistillTrainer(model=model, args=args)


def describe(trainer: Trainer) -> str:  # annotations: untouched
    return type(trainer).__name__
