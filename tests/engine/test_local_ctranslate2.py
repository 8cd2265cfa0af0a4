"""The fast local runtime: CTranslate2 int8 with the answer prompt's head cached.

The first half runs the real small model (Qwen2.5-Coder-0.5B-Instruct from its hash-pinned
packages, dequantised, then converted by CTranslate2; scripts/test.sh prepares both and
sets REQUIRE_LOCAL_LLM=1, so a missing model fails here in CI). The second half converts a
tiny random Qwen2 model built here (seconds, not the 40 s of the real one) to test the
converted folder's verification: a corrupted, truncated or incomplete copy is rebuilt, never
loaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from core.engine.backends.generation import GenerationRequest, GroundedGenerator
from core.engine.backends.generation.gguf_files import QWEN_05B
from core.engine.backends.generation.local_ctranslate2 import MANIFEST, CTranslate2Generator, verify_converted
from core.engine.backends.generation.prompts import ANSWER_HEAD
from core.engine.text import answer_contains_gold, is_idk
from tests.local_model import require_local_model, tiny_qwen
from tests.scripted import ANSWERABLE, UNANSWERABLE

pytestmark = pytest.mark.slow

KEY = QWEN_05B.key


@pytest.fixture(scope="module")
def ct2() -> Iterator[CTranslate2Generator]:
    """The configured generator of the local profile's fast runtime, loaded once."""
    require_local_model()
    from runtime import backends

    # The runtime itself, without the product's grounding of its answers (tested below).
    with override_settings(
        GENERATOR_BACKEND="ctranslate2", LLM_MODEL=KEY, LLM_MAX_NEW_TOKENS=32, ANSWER_GROUNDING=False
    ):
        generator = backends.configured_generator()
        assert isinstance(generator, CTranslate2Generator)
        generator.generate([GenerationRequest(*ANSWERABLE[0][:2])])  # loads it
        yield generator
        backends._generator.cache_clear()


def _requests() -> list[GenerationRequest]:
    return [GenerationRequest(q, [p]) for q, p, _ in ANSWERABLE] + [GenerationRequest(*UNANSWERABLE)]


def test_the_profile_builds_a_verified_int8_copy_keyed_by_the_gguf_hash(ct2: CTranslate2Generator) -> None:
    from django.conf import settings

    assert ct2.name == f"ctranslate2:{KEY}"
    folder = Path(ct2.load_info["folder"])
    assert folder == settings.LLM_MODELS_DIR / f"{KEY}.ct2-int8-{QWEN_05B.sha256[:16]}"
    assert ct2.load_info["compute_type"] == "int8" and ct2.load_info["device"] == "cpu"
    assert verify_converted(folder) is None
    assert json.loads((folder / MANIFEST).read_text())["files"]["model.bin"]["size"] > 400_000_000


def test_the_converted_copy_tokenizes_exactly_as_the_transformers_runtime(ct2: CTranslate2Generator) -> None:
    """Both runtimes must read a prompt as the same tokens (transformers' "incorrect regex"
    warning about Mistral tokenizers does not apply to this Qwen copy)."""
    from django.conf import settings
    from transformers import AutoTokenizer

    from core.engine.backends.generation.local_transformers import TransformersGenerator

    tokenizer, _ = ct2._load()
    reference = AutoTokenizer.from_pretrained(TransformersGenerator(KEY, models_dir=settings.LLM_MODELS_DIR).prepare())
    texts = [
        ANSWER_HEAD,
        "It's the 1960s' hit; they'd've said \"don't\" -- 8,849 m, 3:40 p.m., naïve café, 東京, ÆØÅ!",
        *(f"{q}\n{p}" for q, p, _ in ANSWERABLE),
    ]
    for text in texts:
        assert tokenizer(text)["input_ids"] == reference(text)["input_ids"], text


def test_it_answers_from_the_passage_and_abstains_without_one(ct2: CTranslate2Generator) -> None:
    generations = ct2.generate(_requests())
    for (question, _, gold), generation in zip(ANSWERABLE, generations, strict=False):
        assert answer_contains_gold(generation.text, gold), (question, generation.text)
        assert generation.backend == f"ctranslate2:{KEY}"
        assert generation.prompt_tokens > 400 and 0 < generation.completion_tokens <= 32
        assert "\n" not in generation.text
    assert is_idk(generations[-1].text), generations[-1].text


def test_the_answer_prompts_head_is_cached_and_a_ready_prompt_runs_whole(ct2: CTranslate2Generator) -> None:
    tokenizer, _ = ct2._load()
    head, rest, total = ct2._split(tokenizer, _requests()[0])
    assert 400 < len(head) < total and len(head) + len(rest) == total
    rendered = ct2.render(_requests()[0])
    assert tokenizer.convert_tokens_to_string(head) == rendered[: rendered.index(ANSWER_HEAD) + len(ANSWER_HEAD)]
    ready = GenerationRequest("q", ["p"], prompt="Say yes.")
    assert ct2._split(tokenizer, ready)[0] == []


def test_batches_and_the_cached_head_give_the_answers_of_one_prompt_at_a_time(ct2: CTranslate2Generator) -> None:
    """The same model, run three ways: the product's (head cached, one prompt at a time), a
    batch of four, and every prompt whole without the cache."""
    requests = _requests()
    expected = [g.text for g in ct2.generate(requests)]
    batched = CTranslate2Generator(KEY, 32, models_dir=ct2.transformers.models_dir, batch_size=4)
    batched._loaded = ct2._load()  # the same weights, another way to run them
    batched.load_info = dict(ct2.load_info)
    assert [g.text for g in batched.generate(requests)] == expected
    whole = CTranslate2Generator(KEY, 32, models_dir=ct2.transformers.models_dir, cache_prompt_head=False)
    whole._loaded = ct2._load()
    whole.load_info = dict(ct2.load_info)
    assert [g.text for g in whole.generate(requests)] == expected
    # Token budgets: a request may ask for fewer tokens than the setting.
    (short,) = ct2.generate([GenerationRequest("q", [], prompt="Count from 1 to 50 in words.", max_tokens=3)])
    assert short.completion_tokens <= 3


def test_an_answer_through_the_product_names_the_runtime_and_model(
    ct2: CTranslate2Generator, db: Any, embedder: Any
) -> None:
    from core.services.asking import ask_now
    from tests.corpus import FACTS, store
    from tests.factories import SourceFactory

    store(SourceFactory(name="reference"), [fact for _, _, fact, _ in FACTS], embedder)
    with override_settings(GENERATOR_BACKEND="ctranslate2", LLM_MODEL=KEY, LLM_MAX_NEW_TOKENS=32):
        question = ask_now("Who painted the Mona Lisa?", strategy="vanilla-rag")
    question.refresh_from_db()
    assert question.backend == f"ctranslate2:{KEY}"
    assert answer_contains_gold(question.answer, ["Leonardo da Vinci"]), question.answer
    assert question.calls == 1 and question.tokens > 400


def test_through_the_product_a_question_no_passage_answers_gets_no_answer(
    ct2: CTranslate2Generator, db: Any, embedder: Any
) -> None:
    """The real model, held to its passages (GroundedGenerator, the product's default): a
    question about nothing the corpus holds gets "I don't know", whether its passages are
    set aside as another subject's or read by the model."""
    from core.services.asking import ask_now
    from runtime import backends
    from sources.models import Source
    from tests.corpus import FACTS, store
    from tests.factories import SourceFactory

    store(SourceFactory(name="reference"), [fact for _, _, fact, _ in FACTS], embedder)
    store(SourceFactory(name="geography"), [UNANSWERABLE[1]], embedder)
    with override_settings(
        GENERATOR_BACKEND="ctranslate2", LLM_MODEL=KEY, LLM_MAX_NEW_TOKENS=32, ANSWER_GROUNDING=True
    ):
        generator = backends.configured_generator()
        assert isinstance(generator, GroundedGenerator) and generator.name == f"ctranslate2:{KEY}"
        generator.model._loaded = ct2._load()  # type: ignore[attr-defined]  # the weights already loaded
        generator.model.load_info = dict(ct2.load_info)  # type: ignore[attr-defined]
        answered = ask_now("Who painted the Mona Lisa?", strategy="ra-rag")
        off_topic = ask_now(UNANSWERABLE[0], strategy="ra-rag")
        # Every passage read (min_relevance 0): the model itself must abstain on the passage
        # about the Amazon. (The facts go first: their "Hamlet ... William Shakespeare" is a
        # grounded answer from another subject, which only the relevance rule sets aside.)
        Source.objects.filter(name="reference").delete()
        read_anyway = ask_now(UNANSWERABLE[0], strategy="ra-rag", params={"min_relevance": 0})
        backends._generator.cache_clear()
    assert answer_contains_gold(answered.answer, ["Leonardo da Vinci"]), answered.answer
    assert is_idk(off_topic.answer) and off_topic.calls == 0, off_topic.answer
    assert is_idk(read_anyway.answer) and read_anyway.calls == 1, read_anyway.answer


# --- the converted folder's verification, on a tiny random model ---------------------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-layer Qwen2 model with random weights and the real model's tokenizer, saved as
    a transformers folder (a few MB)."""
    require_local_model()
    from django.conf import settings
    from transformers import AutoTokenizer

    from core.engine.backends.generation.local_transformers import converted_dir

    real = converted_dir(settings.LLM_MODELS_DIR / QWEN_05B.filename, QWEN_05B.sha256)
    tokenizer = AutoTokenizer.from_pretrained(real)
    model = tiny_qwen(vocab_size=len(tokenizer))
    model.config.eos_token_id = tokenizer.eos_token_id
    folder = tmp_path_factory.mktemp("tiny") / "tiny-qwen2"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _tiny(folder: Path) -> CTranslate2Generator:
    return CTranslate2Generator(str(folder), 4, compute_type="int8", threads=1)


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "no manifest", "a file missing"])
def test_a_damaged_copy_is_rebuilt_never_loaded(tiny_model: Path, damage: str) -> None:
    generator = _tiny(tiny_model)
    folder = Path(generator.prepare())
    assert folder.name == "tiny-qwen2.ct2-int8" and verify_converted(folder) is None
    weights = folder / "model.bin"
    if damage == "flip a byte":
        data = bytearray(weights.read_bytes())
        data[len(data) // 2] ^= 0xFF
        weights.write_bytes(bytes(data))
    elif damage == "truncate":
        with weights.open("r+b") as fh:
            fh.truncate(weights.stat().st_size // 2)
    elif damage == "no manifest":
        (folder / MANIFEST).unlink()
    else:
        (folder / "config.json").unlink()
    problem = verify_converted(folder)
    assert problem is not None
    again = _tiny(tiny_model)
    assert again.prepare() == str(folder)
    assert again.load_info["source"] == "ct2-converted" and again.load_info["rebuilt"] == problem
    assert verify_converted(folder) is None
    (generation,) = again.generate([GenerationRequest("q", ["p"])])  # the rebuilt copy loads and runs
    assert generation.backend == f"ctranslate2:{tiny_model}" and generation.completion_tokens <= 4
    third = _tiny(tiny_model)
    third.prepare()
    assert third.load_info["source"] == "ct2-cache" and "rebuilt" not in third.load_info


def test_no_leftover_temporary_folders(tiny_model: Path) -> None:
    _tiny(tiny_model).prepare()
    assert [p.name for p in tiny_model.parent.iterdir() if p.name.startswith(".")] == []
