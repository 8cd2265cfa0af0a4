"""An on-disk cache of language-model generations for benchmark runs with a real LLM.

On this machine a local model takes seconds per prompt, so a benchmark that compares eight
strategies over two adversary settings must not ask the same prompt twice: MV, RA-RAG and
RA-RAG without the filter ask each source the very same prompt, and the estimation phase
asks prompts the test phase asks again. The cache also lets an interrupted run resume.

Keys are the model's name plus the full request (question, passages, ready prompt, token
budget); greedy decoding makes the output a function of the key. Each entry keeps the
seconds its generation took, and :attr:`CachedGenerator.replayed_seconds` adds up those
seconds for every answer served from the cache, so a method's reported seconds per
question are what it would have cost without the cache (see core.bench.qa).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from core.engine.backends.generation import Generation, GenerationRequest, Generator


def request_key(model: str, request: GenerationRequest) -> str:
    payload = json.dumps(
        [model, request.question, list(request.passages), request.prompt, request.max_tokens],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CachedGenerator:
    """The Generator protocol in front of another generator, backed by
    ``<cache_dir>/generations.sqlite``. Only requests missing from the cache reach the model,
    in one batch. White-box access (``white_box``) passes straight through: a strategy that
    runs the model itself (crest-wbx) is not cached."""

    def __init__(self, inner: Generator, cache_dir: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.capabilities = inner.capabilities
        self.replayed_seconds = 0.0
        self.fresh = 0
        self.hits = 0
        cache_dir.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(cache_dir / "generations.sqlite"), check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS generation (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
            "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, seconds REAL NOT NULL)"
        )
        self._db.commit()
        self._lock = threading.Lock()

    def __getattr__(self, attribute: str) -> object:
        # white_box(), render(), load_info... of the inner generator (only called when missing here).
        if attribute == "inner":
            raise AttributeError(attribute)
        return getattr(self.inner, attribute)

    def _lookup(self, keys: Sequence[str]) -> dict[str, tuple[str, int, int, float]]:
        found: dict[str, tuple[str, int, int, float]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, text, prompt_tokens, completion_tokens, seconds FROM generation WHERE key IN ({marks})",
                chunk,
            )
            for key, text, prompt_tokens, completion_tokens, seconds in rows:
                found[key] = (text, int(prompt_tokens), int(completion_tokens), float(seconds))
        return found

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        keys = [request_key(self.name, r) for r in requests]
        with self._lock:
            found = self._lookup(keys)
            missing = {k: r for k, r in zip(keys, requests, strict=True) if k not in found}
            # One model batch at a time, each stored as soon as it is done, so an interrupted
            # run keeps everything it paid for.
            pending = list(missing.items())
            size = max(1, int(getattr(self.inner, "batch_size", 8)))
            for start in range(0, len(pending), size):
                batch = pending[start : start + size]
                started = time.perf_counter()
                generated = self.inner.generate([r for _k, r in batch])
                each = (time.perf_counter() - started) / len(batch)
                rows = [
                    (k, g.text, g.prompt_tokens, g.completion_tokens, each)
                    for (k, _r), g in zip(batch, generated, strict=True)
                ]
                self._db.executemany("INSERT OR REPLACE INTO generation VALUES (?, ?, ?, ?, ?)", rows)
                self._db.commit()
                found.update({k: (t, p, c, s) for k, t, p, c, s in rows})
                self.fresh += len(batch)
            out = []
            for key in keys:
                text, prompt_tokens, completion_tokens, seconds = found[key]
                if key not in missing:
                    self.replayed_seconds += seconds
                    self.hits += 1
                out.append(Generation(text, self.name, prompt_tokens, completion_tokens))
            return out


class CachedScoringGenerator(CachedGenerator):
    """The same, for a generator with white-box access: ``score`` passes through (it is
    only used by strategies whose cost the benchmark measures directly)."""

    def score(self, requests: Sequence[GenerationRequest], continuations: Sequence[str]) -> list[float]:
        from core.engine.backends.generation import TokenScorer

        assert isinstance(self.inner, TokenScorer)  # cached_generator chose this class for a scorer
        return list(self.inner.score(requests, continuations))


def cached_generator(inner: Generator, cache_dir: Path) -> CachedGenerator:
    from core.engine.backends.generation import TokenScorer

    if isinstance(inner, TokenScorer):
        return CachedScoringGenerator(inner, cache_dir)
    return CachedGenerator(inner, cache_dir)
