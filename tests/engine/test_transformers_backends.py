"""Tiny randomly initialised models saved locally, loaded through the real loading code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from core.engine.backends.generation import GenerationRequest, TransformersGenerator
from core.engine.backends.nli import CrossEncoderNLI, label_order

if TYPE_CHECKING:
    from transformers import BertTokenizer

WORDS = [
    "who",
    "what",
    "is",
    "the",
    "answer",
    "question",
    "context",
    "passage",
    "paris",
    "france",
    "i",
    "don't",
    "know",
    "yes",
    "no",
]


def _tokenizer(path: Path) -> BertTokenizer:
    # transformers 5: BertTokenizer is the fast (Rust-backed) tokenizer; BertTokenizerFast is an alias of it.
    from transformers import BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, ":", "?", ".", '"', "[", "]"]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return BertTokenizer(vocab_file=str(path / "vocab.txt"))


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> str:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    path = tmp_path_factory.mktemp("gpt2")
    tokenizer = _tokenizer(path)
    tokenizer.eos_token = "[SEP]"
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=tokenizer.vocab_size,
        n_layer=1,
        n_head=2,
        n_embd=32,
        n_positions=2048,
        eos_token_id=tokenizer.sep_token_id,
        bos_token_id=tokenizer.cls_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> str:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    path = tmp_path_factory.mktemp("nli")
    tokenizer = _tokenizer(path)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        id2label={0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"},
        label2id={"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2},
    )
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def test_it_generates_greedily_with_a_local_causal_model(tiny_gpt2: str) -> None:
    gen = TransformersGenerator(tiny_gpt2, device="cpu", max_new_tokens=4)
    requests = [GenerationRequest("who is it?", ["paris france"]), GenerationRequest("what is the answer?", [])]
    first, second = gen.generate(requests), gen.generate(requests)
    assert [g.text for g in first] == [g.text for g in second]  # greedy is deterministic
    assert all(g.backend == f"transformers:{tiny_gpt2}" for g in first)
    assert all(g.prompt_tokens > 20 and 0 <= g.completion_tokens <= 4 for g in first)


def test_it_scores_pairs_with_a_sequence_classification_nli(tiny_nli: str) -> None:
    nli = CrossEncoderNLI(tiny_nli, device="cpu")
    probs = nli.predict([("paris is in france", "paris is in france"), ("yes", "no")])
    assert len(probs) == 2
    for triple in probs:
        assert len(triple) == 3 and abs(sum(triple) - 1.0) < 1e-5


def test_it_reads_the_label_order_from_the_config() -> None:
    assert label_order({0: "contradiction", 1: "neutral", 2: "entailment"}) == [2, 1, 0]
    assert label_order({0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}) == [0, 1, 2]
    with pytest.raises(ValueError):
        label_order({0: "positive", 1: "negative"})


def test_each_request_of_a_batch_writes_at_most_its_own_budget(tiny_gpt2: str) -> None:
    gen = TransformersGenerator(tiny_gpt2, device="cpu", max_new_tokens=2)
    short, long = gen.generate(
        [GenerationRequest("who is it?", ["paris"], max_tokens=1), GenerationRequest("what?", ["lyon"], max_tokens=6)]
    )
    default = gen.generate([GenerationRequest("what?", ["lyon"])])[0]
    assert short.completion_tokens <= 1
    assert long.completion_tokens <= 6
    assert default.completion_tokens <= 2


def test_the_weights_dtype_is_a_setting(tiny_gpt2: str) -> None:
    import torch

    from core.engine.backends.generation import local_transformers

    expected = torch.bfloat16 if local_transformers.cpu_has_amx_bf16() else torch.float32
    default = TransformersGenerator(tiny_gpt2, device="cpu")
    assert default.white_box()[1].dtype == expected  # auto on a CPU: bfloat16 only where AMX runs it
    half = TransformersGenerator(tiny_gpt2, device="cpu", max_new_tokens=2, dtype="bfloat16")
    assert half.white_box()[1].dtype == torch.bfloat16
    assert half.load_info["dtype"] == "bfloat16"
    assert half.generate([GenerationRequest("who?", ["paris"])])[0].completion_tokens <= 2
    with pytest.raises(ValueError, match="dtype"):
        TransformersGenerator(tiny_gpt2, dtype="float8")


def test_auto_picks_bfloat16_on_a_cpu_only_where_amx_multiplies_it(
    tiny_gpt2: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from core.engine.backends.generation import local_transformers

    amx = tmp_path / "amx"
    amx.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f amx_bf16 amx_tile amx_int8\n")
    avx512 = tmp_path / "avx512"
    avx512.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n")
    assert local_transformers.cpu_has_amx_bf16(amx)
    assert not local_transformers.cpu_has_amx_bf16(avx512)  # AVX512-BF16 alone: converts, no tiles
    assert not local_transformers.cpu_has_amx_bf16(tmp_path / "missing")
    for flags, expected in ((amx, torch.bfloat16), (avx512, torch.float32)):
        monkeypatch.setattr(local_transformers, "cpu_has_amx_bf16", lambda path=flags: path == amx)
        generator = TransformersGenerator(tiny_gpt2, device="cpu")
        assert generator.white_box()[1].dtype == expected
        assert generator.load_info["dtype"] == str(expected).removeprefix("torch.")
