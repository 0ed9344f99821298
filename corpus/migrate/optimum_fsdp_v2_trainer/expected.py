# Fine-tune Gemma with FSDPv2 on a TPU v5e using optimum-tpu and the HF Trainer.
import os
import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments, DataCollatorForLanguageModeling
import functools


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



def make_tiny_checkpoint(path):
    """Offline stand-in for google/gemma-2b: a 2-layer Gemma (seeded random weights) and a word-level tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GemmaConfig, GemmaForCausalLM, PreTrainedTokenizerFast

    words = "<pad> <eos> <bos> <unk> be yourself everyone else is already taken so it goes".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", bos_token="<bos>", unk_token="<unk>").save_pretrained(path)
    torch.manual_seed(0)
    config = GemmaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, head_dim=16, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    GemmaForCausalLM(config).save_pretrained(path)
    return path


model_id = make_tiny_checkpoint("tiny-gemma")  # was "google/gemma-2b"
tokenizer = AutoTokenizer.from_pretrained(model_id)
tokenizer.pad_token = tokenizer.eos_token
model = AutoModelForCausalLM.from_pretrained(model_id, torch_dtype=torch.bfloat16)

# in place of load_dataset("Abirate/english_quotes", split="train"): a few quotes, tokenized
quotes = ["be yourself everyone else is already taken", "so it goes", "everyone else is taken", "it goes"]
data = [tokenizer(q, truncation=True, max_length=128) for q in quotes]

fsdp_training_args = {"use_cpu": accelerate_tpu_processes()}

trainer = torchtpu_trainer(Trainer)(
    model=model,
    train_dataset=data,
    args=TrainingArguments(
        per_device_train_batch_size=2,
        num_train_epochs=1,
        max_steps=-1,
        output_dir="./output",
        optim="adafactor",
        logging_steps=1,
        dataloader_drop_last=True,  # Required for FSDPv2.
        ddp_find_unused_parameters=False,
        seed=0,
        report_to=[],
        **fsdp_training_args,
    ),
    data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
)
result = trainer.train()
params_on = sorted({p.device.type for p in trainer.model.parameters()})
checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
print(f"rank {trainer.args.process_index} of {trainer.args.world_size} params_on={params_on} checksum={checksum:.6f}")
