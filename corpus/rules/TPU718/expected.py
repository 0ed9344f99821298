# TPU718 trainer-arguments-class
import os
import sys
from dataclasses import dataclass, field

import transformers
from transformers import HfArgumentParser, Seq2SeqTrainingArguments, TrainingArguments
import dataclasses
import functools
import torch
import torch.distributed as dist


def accelerate_tpu_processes():
    """True in one of several TorchTPU processes (torchrun, `accelerate launch`).

    accelerate has no multi-process type for the "tpu" device: each rank would train
    alone. Its multi-process CPU mode (`cpu=True`) shards the data and wraps DDP without
    device ids; ACCELERATE_TORCH_DEVICE keeps the device "tpu", and the process group it
    finds is TorchTPU's (gloo for the CPU tensors accelerate gathers).
    """
    if (
        int(os.environ.get("WORLD_SIZE", "1")) <= 1
        or not torch.accelerator.is_available()
    ):
        return False
    if torch.accelerator.current_accelerator().type != "tpu":
        return False
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        # accelerate's multi-process CPU mode has no FSDP: it would silently use DDP.
        raise RuntimeError(
            "accelerate has no FSDP mode for TorchTPU: shard with torch.distributed.fsdp.fully_shard"
        )
    os.environ.setdefault("ACCELERATE_TORCH_DEVICE", "tpu")
    if not dist.is_initialized():
        dist.init_process_group("tpu:tpu_dist,cpu:gloo")
    return True


@functools.cache
def torchtpu_training_arguments(cls):
    """`cls` (TrainingArguments or a subclass) whose instances pick accelerate's multi-process
    mode on TorchTPU processes, however they are built (HfArgumentParser, `**config`), and
    take a 4.x script's keywords that transformers 5 removed.

    `use_cpu` must be set before `__post_init__`, which sets up the device.
    """

    fields = {f.name for f in dataclasses.fields(cls)}

    @dataclasses.dataclass
    class TorchTPUArguments(cls):
        def __init__(self, *args, **kwargs):
            # Keywords transformers 5 removed (TorchTPU's Trainer needs 5.20 or newer): torch_xla's
            # go, renamed ones take their new names.
            kwargs.pop("tpu_num_cores", None)
            kwargs.pop("tpu_metrics_debug", None)
            if "evaluation_strategy" in kwargs and "evaluation_strategy" not in fields:
                kwargs["eval_strategy"] = kwargs.pop("evaluation_strategy")
            if "warmup_ratio" in kwargs and "warmup_ratio" not in fields:
                ratio = kwargs.pop("warmup_ratio")
                if ratio and not kwargs.get("warmup_steps"):
                    if not 0 < ratio < 1:
                        raise ValueError(
                            f"warmup_ratio={ratio}: transformers 5 takes a ratio below 1 as warmup_steps"
                        )
                    kwargs["warmup_steps"] = ratio
            if "logging_dir" in kwargs and "logging_dir" not in fields:
                logging_dir = kwargs.pop("logging_dir")
                if logging_dir is not None:
                    os.environ.setdefault("TENSORBOARD_LOGGING_DIR", logging_dir)
            super().__init__(*args, **kwargs)

        def __post_init__(self):
            if not self.use_cpu:
                self.use_cpu = accelerate_tpu_processes()
                if self.use_cpu and self.fsdp:
                    # accelerate's multi-process CPU mode has no FSDP: it would silently use DDP.
                    raise RuntimeError(
                        "accelerate has no FSDP mode for TorchTPU: shard with torch.distributed.fsdp.fully_shard"
                    )
            super().__post_init__()

        def __reduce_ex__(self, protocol):
            # Pickled (the Trainer's `training_args.bin`) as `cls`: loadable without this helper.
            if type(self) is not TorchTPUArguments:
                return super().__reduce_ex__(protocol)
            return (object.__new__, (cls,), self.__dict__)

    TorchTPUArguments.__name__ = cls.__name__
    TorchTPUArguments.__qualname__ = cls.__qualname__
    return TorchTPUArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="bert-base-uncased")


@dataclass
class ProjectTrainingArguments(torchtpu_training_arguments(transformers.TrainingArguments)):  # a subclass with the project's fields
    warmup_fraction: float = 0.1


def parse() -> TrainingArguments:  # annotations: untouched
    parser = HfArgumentParser((ModelArguments, torchtpu_training_arguments(TrainingArguments)))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        return parser.parse_json_file(json_file=sys.argv[1])[1]
    return parser.parse_args_into_dataclasses()[1]


def from_config(config: dict):
    seq2seq = torchtpu_training_arguments(Seq2SeqTrainingArguments)(**config)
    plain = torchtpu_training_arguments(TrainingArguments)(output_dir="out", **config)
    assert isinstance(plain, TrainingArguments)  # class tests: untouched
    literal = torchtpu_training_arguments(TrainingArguments)(**{"output_dir": "out", "seed": 1})
    on_cpu = TrainingArguments(**{"output_dir": "out", "use_cpu": True})  # asks for the CPU: untouched
    return seq2seq, plain, literal, on_cpu


direct = TrainingArguments(output_dir="out", use_cpu=True)  # a call TPU712 reads: not this rule's
parser_classes = [ModelArguments, ProjectTrainingArguments]
