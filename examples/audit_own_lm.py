"""Audit a causal language model you fine-tuned yourself, with the Python API and with the command line.

    MIAUDIT_DATA_DIR=... python examples/audit_own_lm.py [WORKDIR]

1. The user's side, no miaudit involved: a tiny GPT-2 (transformers) with a word-level tokenizer
   (tokenizers) is pre-trained on 2,000 AG News texts (the base), then fine-tuned on 300 other texts
   (the members). Saved as two local directories, ``base/`` and ``tuned/``, with the audited texts
   (``texts.csv``: the 300 members, 300 texts never seen, 600 more) and the members' and non-members'
   row numbers (``members.txt``, ``nonmembers.txt``).
2. Audit it in Python: ``miaudit.audit("tuned", members=[texts], ...)``, references fine-tuned from the base.
3. Audit the saved files from the command line: ``miaudit run own-lm.yaml`` (``examples/own-lm.yaml``,
   copied into WORKDIR, where its relative paths point).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

if TYPE_CHECKING:
    from miaudit.results import AuditReport

HERE = Path(__file__).resolve().parent
LENGTH, EPOCHS_BASE, EPOCHS_TUNE = 64, 4, 6
ATTACKS = ["attack-p", "zlib", "min-k", "min-k-pp", {"name": "lira", "references": 2}]
TRAIN = {"epochs": EPOCHS_TUNE, "batch_size": 32, "lr": 0.001, "optimizer": "adamw"}


def news_texts() -> list[str]:
    """AG News's test file (title and description), in a fixed shuffled order."""
    path = Path(os.environ.get("MIAUDIT_DATA_DIR", "")) / "ag_news" / "test.csv"
    rows = pd.read_csv(path, header=None, dtype=str, keep_default_na=False)
    texts = (rows[1] + " " + rows[2]).tolist()
    return [texts[i] for i in np.random.default_rng(0).permutation(len(texts))]


def tokenizer_for(texts: list[str]):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(texts, trainers.WordLevelTrainer(vocab_size=3000, special_tokens=["[PAD]", "[UNK]", "<s>"]))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 2)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        bos_token="<s>",
        eos_token="<s>",
        model_max_length=LENGTH,
    )


def fit(model, tokenizer, texts: list[str], epochs: int, seed: int) -> None:
    """A plain causal-LM loop: AdamW, batches of 32, padding masked out of the loss."""
    torch.manual_seed(seed)
    enc = tokenizer(texts, padding="max_length", truncation=True, max_length=LENGTH, return_tensors="pt")
    labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for _ in range(epochs):
        for batch in torch.randperm(len(texts)).split(32):
            opt.zero_grad()
            out = model(
                input_ids=enc["input_ids"][batch], attention_mask=enc["attention_mask"][batch], labels=labels[batch]
            )
            out.loss.backward()
            opt.step()
    model.eval()


def train_and_save(workdir: Path) -> list[str]:
    """Step 1: a base pre-trained on 2,000 texts, fine-tuned on the 300 members; the audited texts saved."""
    from transformers import GPT2Config, GPT2LMHeadModel

    texts = news_texts()
    pretrain, audited = texts[:2000], texts[2000:3200]
    tokenizer = tokenizer_for(pretrain)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=LENGTH,
        n_embd=64,
        n_layer=2,
        n_head=2,
        bos_token_id=2,
        eos_token_id=2,
        pad_token_id=0,
    )
    model = GPT2LMHeadModel(config)
    fit(model, tokenizer, pretrain, EPOCHS_BASE, seed=1)
    for name in ("base", "tuned"):
        if name == "tuned":
            fit(model, tokenizer, audited[:300], EPOCHS_TUNE, seed=2)
        model.save_pretrained(workdir / name)
        tokenizer.save_pretrained(workdir / name)
    pd.DataFrame({"text": audited}).to_csv(workdir / "texts.csv", index=False)
    np.savetxt(workdir / "members.txt", np.arange(300), fmt="%d")
    np.savetxt(workdir / "nonmembers.txt", np.arange(300, 600), fmt="%d")
    return audited


def audit_in_python(audited: list[str], workdir: Path) -> AuditReport:
    """Step 2: the Python API on the directory and lists of texts."""
    import miaudit

    result = miaudit.audit(
        str(workdir / "tuned"),
        members=audited[:300],
        nonmembers=audited[300:600],
        population=audited[600:],
        attacks=ATTACKS,
        train={**TRAIN, "base": str(workdir / "base")},
    )
    return result.report(workdir / "api-report", force=True)


def audit_from_cli(workdir: Path) -> None:
    """Step 3: examples/own-lm.yaml on the same files."""
    shutil.copy(HERE / "own-lm.yaml", workdir / "own-lm.yaml")
    command = [shutil.which("miaudit") or sys.executable, "run", "own-lm.yaml", "--out", "cli-report", "--force"]
    if not shutil.which("miaudit"):
        command[1:1] = ["-m", "miaudit.cli"]
    print("$ miaudit run own-lm.yaml --out cli-report --force", flush=True)
    subprocess.run(command, cwd=workdir, check=True)


def main() -> None:
    torch.set_num_threads(1)
    workdir = Path(sys.argv[1] if len(sys.argv) > 1 else "audit-own-lm").resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    audited = train_and_save(workdir)
    results = audit_in_python(audited, workdir)
    for a in results.attacks:  # results.json, typed (miaudit.results.AuditReport)
        print(f"API  {a.label:<12} AUC {a.auc:.3f}  TPR@1% {100 * a.tpr_at_fpr['0.01']:.1f}%")
    print(f"API  blind baseline AUC {results.blind_baseline.auc:.3f}")
    audit_from_cli(workdir)
    print(f"reports in {workdir}/api-report and {workdir}/cli-report")


if __name__ == "__main__":
    main()
