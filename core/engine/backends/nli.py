"""Natural-language inference backends used by the alignment filter and semantic clustering.

predict(pairs) returns, per (premise, hypothesis), the probabilities
(entailment, neutral, contradiction).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeGuard

import numpy as np
import numpy.typing as npt

from core.engine.lexical import content_set, is_number
from core.engine.registry import BackendNotConfigured, Registry
from core.engine.types import Embedder

Probs = tuple[float, float, float]


class NLI(Protocol):
    name: str

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[Probs]: ...


class EmbeddingLexicalNLI:
    """Offline NLI from lexical evidence plus embedding similarity (no NLI model needed).

    - entailment grows with the share of the hypothesis's content words found in the premise
      (squared, so every missing word costs), scaled by cosine similarity when an embedder is
      given;
    - a number in the hypothesis that the premise does not hold, while the premise states other
      numbers, is a contradiction ("23 episodes" vs "24 episodes");
    - two short statements that each hold words the other lacks make different claims about
      the same thing ("q president" vs "q senators"): contradiction.
    A lexical model cannot tell which hypothesis words carry the claim, so the alignment filter
    additionally checks that the answer itself is grounded (requires_answer_grounding).
    """

    requires_answer_grounding = True

    def __init__(
        self, embedder: Embedder | None = None, short_premise_words: int = 24, cache_size: int = 20000
    ) -> None:
        self.embedder = embedder
        self.short_premise_words = short_premise_words
        self.name = f"lexical+{embedder.name}" if embedder is not None else "lexical"
        # Passages recur across sources' votes, clustering and later questions; encoding
        # them again dominated an ask's time, so vectors are kept (bounded, LRU).
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[Probs]:
        if not pairs:
            return []
        sims = self._similarities(pairs)
        return [self._one(p, h, s) for (p, h), s in zip(pairs, sims, strict=False)]

    def predict_range(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[Probs, Probs]]:
        """Per pair, the probabilities at the lowest and at the highest similarity the pair can
        have, without encoding anything: exact (both the same) when both texts' vectors are
        held, else at similarity 0 and 1. Entailment only grows with the similarity, so a
        decision that holds at both ends holds for the true similarity (the alignment filter
        then needs no model call for it)."""
        if self.embedder is None:
            probs = self.predict(pairs)
            return list(zip(probs, probs, strict=True))
        with self._lock:
            held = {t: self._cache[t] for pair in pairs for t in pair if t in self._cache}
        out: list[tuple[Probs, Probs]] = []
        for p, h in pairs:
            if p in held and h in held:
                exact = self._one(p, h, float(np.dot(held[p], held[h])))
                out.append((exact, exact))
            else:
                out.append((self._one(p, h, 0.0), self._one(p, h, 1.0)))
        return out

    def remember(self, texts: Sequence[str], vectors: Sequence[npt.NDArray[np.float32]]) -> None:
        """Keep vectors this NLI's embedder already produced elsewhere (a passage's chunk
        vector, stored when it was ingested), so those texts are never encoded again here.
        The caller vouches that `vectors[i]` is `embedder.encode([texts[i]])[0]`."""
        if self.embedder is None:
            return
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._cache[text] = np.asarray(vector, dtype=np.float32)
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def prepare(self, texts: Iterable[str]) -> None:
        """Encode the texts not held yet in one batched call: a caller that knows the texts
        of many coming predict() calls saves the model's per-call cost (same scores). More
        texts than half the cache holds are left to predict(): they would evict each other."""
        wanted = set(texts)
        if self.embedder is not None and len(wanted) <= self._cache_size // 2:
            self._vectors(wanted)

    def _similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if self.embedder is None:
            return [1.0] * len(pairs)
        vectors = self._vectors({t for pair in pairs for t in pair})
        return [float(np.dot(vectors[p], vectors[h])) for p, h in pairs]

    def _vectors(self, texts: set[str]) -> dict[str, npt.NDArray[np.float32]]:
        assert self.embedder is not None
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
            for t in found:
                self._cache.move_to_end(t)
        missing = sorted(texts - found.keys())
        if missing:
            encoded = self.embedder.encode(missing)
            with self._lock:
                for t, v in zip(missing, encoded, strict=True):
                    found[t] = v
                    self._cache[t] = v
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return found

    def _one(self, premise: str, hypothesis: str, similarity: float) -> Probs:
        p_words, h_words = content_set(premise), content_set(hypothesis)
        if not h_words:
            return (0.0, 1.0, 0.0)
        novel_h = h_words - p_words
        novel_p = p_words - h_words
        coverage = 1.0 - len(novel_h) / len(h_words)
        sim = min(max(similarity, 0.0), 1.0)
        entail = coverage**2 * (0.5 + 0.5 * sim)
        contradiction = 0.0
        p_numbers = {w for w in p_words if is_number(w)}
        if any(is_number(w) for w in novel_h) and p_numbers:
            contradiction = 0.9
        elif novel_h and novel_p and len(p_words) <= self.short_premise_words:
            contradiction = 0.8
        if contradiction:
            entail = min(entail, 1.0 - contradiction)
        neutral = max(0.0, 1.0 - entail - contradiction)
        return (entail, neutral, contradiction)


class CrossEncoderNLI:
    """A sequence-classification NLI model (e.g. a DeBERTa MNLI checkpoint) by name or path."""

    requires_answer_grounding = False

    def __init__(self, model_name_or_path: str, device: str | None = None, batch_size: int = 16) -> None:
        self.model_name_or_path = model_name_or_path
        self.name = f"cross-encoder:{model_name_or_path}"
        self.batch_size = batch_size
        self._device = device
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, list[int]] | None = None

    def _load(self) -> tuple[Any, Any, list[int]]:
        with self._lock:
            if self._loaded is None:
                import torch
                from transformers import AutoModelForSequenceClassification, AutoTokenizer

                device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
                tokenizer = AutoTokenizer.from_pretrained(self.model_name_or_path)
                model = AutoModelForSequenceClassification.from_pretrained(self.model_name_or_path).to(device)
                model.eval()
                self._loaded = (tokenizer, model, label_order(model.config.id2label))
            return self._loaded

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[Probs]:
        if not pairs:
            return []
        import torch

        tokenizer, model, order = self._load()
        out: list[Probs] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start : start + self.batch_size]
            encoded = tokenizer(
                [p for p, _ in batch],
                [h for _, h in batch],
                padding=True,
                truncation=True,
                max_length=512,
                return_tensors="pt",
            ).to(model.device)
            with torch.no_grad():
                probs = torch.softmax(model(**encoded).logits.float(), dim=-1).cpu().numpy()
            for row in probs:
                out.append((float(row[order[0]]), float(row[order[1]]), float(row[order[2]])))
        return out


def label_order(id2label: dict[int, str] | dict[str, str]) -> list[int]:
    """Indices of (entailment, neutral, contradiction) in the model's logits.

    Checkpoints disagree on the order, so it is read from config.id2label; generic
    LABEL_0.. names fall back to the MNLI convention (contradiction, neutral, entailment)
    only when no label name can be recognised.
    """
    found: dict[str, int] = {}
    for key, label in id2label.items():
        name = str(label).lower()
        for wanted in ("entail", "neutral", "contradict"):
            if name.startswith(wanted):
                found[wanted] = int(key)
    if len(found) == 3:
        return [found["entail"], found["neutral"], found["contradict"]]
    if len(id2label) == 3:
        return [2, 1, 0]
    raise ValueError(f"cannot read entailment/neutral/contradiction labels from {id2label}")


# An NLI backend is built from its model name (NLI_MODEL) and the configured embedder.
NLIFactory = Callable[[str, Embedder], NLI]


def _is_nli_factory(item: object) -> TypeGuard[NLIFactory]:
    return callable(item)


# NLI backends by name (NLI_BACKEND): ``@NLI_BACKENDS.register("offline")``.
NLI_BACKENDS: Registry[NLIFactory] = Registry("NLI backend", _is_nli_factory)


@NLI_BACKENDS.register("offline")
def offline_nli(model: str, embedder: Embedder) -> NLI:
    return EmbeddingLexicalNLI(embedder)


@NLI_BACKENDS.register("cross-encoder")
def cross_encoder_nli(model: str, embedder: Embedder) -> NLI:
    if not model:
        raise BackendNotConfigured("NLI_BACKEND=cross-encoder needs NLI_MODEL (a model name or path)")
    return CrossEncoderNLI(model)
