# TPU718 trainer-arguments-class
import sys
from dataclasses import dataclass, field

import transformers
from transformers import HfArgumentParser, Seq2SeqTrainingArguments, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="bert-base-uncased")


@dataclass
class ProjectTrainingArguments(transformers.TrainingArguments):  # a subclass with the project's fields
    warmup_fraction: float = 0.1


def parse() -> TrainingArguments:  # annotations: untouched
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        return parser.parse_json_file(json_file=sys.argv[1])[1]
    return parser.parse_args_into_dataclasses()[1]


def from_config(config: dict):
    seq2seq = Seq2SeqTrainingArguments(**config)
    plain = TrainingArguments(output_dir="out", **config)
    assert isinstance(plain, TrainingArguments)  # class tests: untouched
    literal = TrainingArguments(**{"output_dir": "out", "seed": 1})
    on_cpu = TrainingArguments(**{"output_dir": "out", "use_cpu": True})  # asks for the CPU: untouched
    return seq2seq, plain, literal, on_cpu


direct = TrainingArguments(output_dir="out", use_cpu=True)  # a call TPU712 reads: not this rule's
parser_classes = [ModelArguments, ProjectTrainingArguments]
