"""An OpenAI-compatible chat-completions backend over the standard library.

POST {base_url}/chat/completions for each request, a thread pool for concurrency, and
retries with exponential backoff on 429 and 5xx (and network errors: a refused or reset
connection, a server that closed mid-reply, a timeout). Every failure ends in a
GenerationError that says what happened; none hangs: each attempt is bounded by ``timeout``.

Before its first request the generator asks the server which models it serves
(GET {base_url}/models): a configured name the server does not list is a clear error at once
("serves X, not Y") instead of a 404 or, worse, answers from another model. A server without
that route (some proxies) is trusted.

tests/engine/test_openai_real_server.py runs it against llama.cpp's own server (the
xllamacpp wheel) serving the local model on loopback.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from core.engine.backends.generation.base import (
    GENERATORS,
    BackendNotConfigured,
    Capability,
    Generation,
    GenerationRequest,
    GeneratorSettings,
    token_budget,
)
from core.engine.backends.generation.prompts import SYSTEM, finish_completion, user_prompt
from core.engine.text import whitespace_tokens


class GenerationError(RuntimeError):
    pass


class OpenAIChatGenerator:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 8,
        max_tokens: int = 32,
        backoff: float = 0.5,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = max(1, concurrency)
        self.max_tokens = max_tokens
        self.backoff = backoff
        self.name = f"openai:{model}"
        self.capabilities = frozenset({Capability.FREE_TEXT})
        self._model_checked = False
        self._check_lock = threading.Lock()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        self.check_model()
        if len(requests) == 1 or self.concurrency == 1:
            return [self._one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))

    def _one(self, request: GenerationRequest) -> Generation:
        prompt = user_prompt(request.prompt, request.question, request.passages)
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0,
            "max_tokens": token_budget(request, self.max_tokens),
        }
        reply = self._post(body)
        try:
            text = reply["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise GenerationError(f"malformed chat completion: {reply!r:.200}") from exc
        usage = reply.get("usage") or {}
        return Generation(
            text=finish_completion(request.prompt, text),
            backend=self.name,
            prompt_tokens=int(usage.get("prompt_tokens", whitespace_tokens(prompt))),
            completion_tokens=int(usage.get("completion_tokens", whitespace_tokens(text))),
        )

    def served_models(self) -> list[str] | None:
        """The model names the server lists (GET /models), or None when it has no such route."""
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        request = urllib.request.Request(f"{self.base_url}/models", headers=headers, method="GET")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                listing = json.loads(response.read().decode())
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 405, 501):
                return None
            raise GenerationError(f"the server at {self.base_url} answered HTTP {exc.code} to GET /models") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise GenerationError(f"cannot reach the language model server at {self.base_url}: {exc}") from exc
        except ValueError as exc:
            raise GenerationError(
                f"the server at {self.base_url} listed its models in a reply that is not JSON"
            ) from exc
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            return None
        names: list[str] = []
        for entry in data:
            if isinstance(entry, dict):
                names.extend(str(entry[field]) for field in ("id", "name") if entry.get(field))
                names.extend(str(alias) for alias in entry.get("aliases") or () if isinstance(alias, str))
        return names

    def check_model(self) -> None:
        """Fail at once, with the names the server offers, when it does not serve ``model``
        (checked once per generator; a server that cannot be reached is an error too)."""
        if self._model_checked:
            return
        with self._check_lock:
            if self._model_checked:
                return
            names = self.served_models()
            if names is not None and self.model not in names:
                offered = ", ".join(sorted(set(names))) or "none"
                raise GenerationError(
                    f"the server at {self.base_url} does not serve the model {self.model!r} (LLM_MODEL); "
                    f"it serves: {offered}"
                )
            self._model_checked = True

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = ""
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(
                f"{self.base_url}/chat/completions", data=data, headers=headers, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                last_error = f"HTTP {exc.code}: {exc.read()[:200]!r}"
                # Client errors other than rate limiting will not succeed on a retry.
                if exc.code != 429 and exc.code < 500:
                    raise GenerationError(last_error) from exc
            except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
                # refused, reset, timed out, or closed mid-reply (a server that died)
                last_error = f"{type(exc).__name__}: {exc}"
            else:
                try:
                    parsed = json.loads(raw.decode())
                except (UnicodeDecodeError, ValueError) as exc:
                    raise GenerationError(f"the server's reply is not JSON: {raw[:200]!r}") from exc
                if not isinstance(parsed, dict):
                    raise GenerationError(f"malformed chat completion: {parsed!r:.200}")
                return parsed
            if attempt < self.max_retries:
                time.sleep(self.backoff * 2**attempt)
        raise GenerationError(f"chat completion failed after retries: {last_error}")


@GENERATORS.register("openai")
def openai_chat(settings: GeneratorSettings) -> OpenAIChatGenerator:
    if not settings.base_url or not settings.model:
        raise BackendNotConfigured("GENERATOR_BACKEND=openai needs LLM_BASE_URL and LLM_MODEL")
    return OpenAIChatGenerator(
        settings.base_url,
        settings.model,
        settings.api_key,
        timeout=settings.timeout,
        max_retries=settings.retries,
        concurrency=settings.concurrency,
        max_tokens=settings.max_new_tokens,
    )
