"""An OpenAI-compatible chat-completions backend over the standard library.

POST {base_url}/chat/completions for each request, a thread pool for concurrency, and
retries with exponential backoff on 429 and 5xx (and network errors).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from core.engine.backends.generation.base import Capability, Generation, GenerationRequest, token_budget
from core.engine.backends.generation.prompts import SYSTEM, answer_prompt, clean_completion
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

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        if len(requests) == 1 or self.concurrency == 1:
            return [self._one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))

    def _one(self, request: GenerationRequest) -> Generation:
        prompt = request.prompt or answer_prompt(request.question, request.passages)
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
            text=clean_completion(text) if request.prompt is None else text.strip(),
            backend=self.name,
            prompt_tokens=int(usage.get("prompt_tokens", whitespace_tokens(prompt))),
            completion_tokens=int(usage.get("completion_tokens", whitespace_tokens(text))),
        )

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
                    parsed: dict[str, Any] = json.loads(response.read().decode())
                    return parsed
            except urllib.error.HTTPError as exc:
                last_error = f"HTTP {exc.code}: {exc.read()[:200]!r}"
                # Client errors other than rate limiting will not succeed on a retry.
                if exc.code != 429 and exc.code < 500:
                    raise GenerationError(last_error) from exc
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last_error = str(exc)
            if attempt < self.max_retries:
                time.sleep(self.backoff * 2**attempt)
        raise GenerationError(f"chat completion failed after retries: {last_error}")
