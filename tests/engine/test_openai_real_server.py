"""GENERATOR_BACKEND=openai against a real OpenAI-compatible server: llama.cpp's (the
xllamacpp wheel of requirements-dev.txt) serving the local 0.5B GGUF on loopback, in a
process of its own (tests/engine/llama_server.py), so a test can kill it mid-request.

The local model comes from the hash-pinned packages scripts/test.sh installs (with
REQUIRE_LOCAL_LLM=1 a missing model or server fails here instead of skipping).
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from core.engine.backends.generation import GenerationError, GenerationRequest, OpenAIChatGenerator
from core.engine.backends.generation.gguf_files import QWEN_05B
from core.engine.text import answer_contains_gold
from tests.local_model import require_local_model, unavailable

pytestmark = pytest.mark.slow

ALIAS = "qwen-local"
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """One server process; ``url`` is its OpenAI base URL."""

    def __init__(self, gguf: Path, log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.engine.llama_server", str(gguf), str(self.port), ALIAS],
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the llama.cpp server exited ({self.process.returncode}); see {log}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the llama.cpp server did not answer in 120 s; see {log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def _gguf() -> Path:
    from django.conf import settings

    require_local_model()
    if importlib.util.find_spec("xllamacpp") is None:
        unavailable("the xllamacpp package (requirements-dev.txt) is missing", "requirements-dev.txt")
    return Path(settings.LLM_MODELS_DIR) / QWEN_05B.filename


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    running = LlamaServer(_gguf(), tmp_path_factory.mktemp("llama") / "server.log")
    yield running
    running.stop()


def test_the_server_lists_the_model_under_its_alias(server: LlamaServer) -> None:
    assert ALIAS in (OpenAIChatGenerator(server.url, ALIAS).served_models() or [])


def test_a_question_is_answered_through_the_real_server(server: LlamaServer, db: Any, embedder: Any) -> None:
    from core.services.asking import ask_now
    from runtime import backends
    from tests.corpus import FACTS, store
    from tests.factories import SourceFactory

    store(SourceFactory(name="reference"), [fact for _, _, fact, _ in FACTS], embedder)
    values = {"GENERATOR_BACKEND": "openai", "LLM_BASE_URL": server.url, "LLM_MODEL": ALIAS}
    with override_settings(**values):
        try:
            question = ask_now("Who painted the Mona Lisa?", strategy="vanilla-rag")
        finally:
            backends._generator.cache_clear()
    question.refresh_from_db()
    assert question.backend == f"openai:{ALIAS}"
    assert answer_contains_gold(question.answer, ["Leonardo da Vinci"]), question.answer
    assert question.calls == 1 and question.tokens > 400  # the server's own token count


def test_a_wrong_model_name_is_a_clear_error_naming_what_is_served(server: LlamaServer) -> None:
    with pytest.raises(GenerationError, match=rf"does not serve the model 'qwen-huge'.*serves: .*{ALIAS}"):
        OpenAIChatGenerator(server.url, "qwen-huge").generate([GenerationRequest("Who?", ["p"])])


def test_a_timeout_is_a_clear_error_not_a_hung_worker(server: LlamaServer) -> None:
    """A prompt of about 650 tokens takes the server seconds: a 0.2 s timeout per attempt
    must end the call, retries included, in about a second."""
    gen = OpenAIChatGenerator(server.url, ALIAS, timeout=0.2, max_retries=1, backoff=0.0)
    gen.check_model()
    started = time.monotonic()
    with pytest.raises(GenerationError, match="after retries: .*timed out"):
        gen.generate([GenerationRequest("Who discovered penicillin in 1928?", ["Alexander Fleming " * 80])])
    assert time.monotonic() - started < 10


def test_a_server_that_dies_mid_request_is_a_clear_error(tmp_path: Path) -> None:
    dying = LlamaServer(_gguf(), tmp_path / "dying.log")
    gen = OpenAIChatGenerator(dying.url, ALIAS, timeout=30, max_retries=2, backoff=0.2)
    gen.check_model()
    outcome: dict[str, Any] = {}

    def ask() -> None:
        try:
            outcome["generations"] = gen.generate([GenerationRequest("Who wrote Hamlet?", ["Shakespeare " * 150])])
        except GenerationError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=ask)
    started = time.monotonic()
    thread.start()
    time.sleep(1.0)  # the request is in the server's hands (the prompt alone takes seconds)
    dying.process.kill()
    dying.process.wait()
    dying.stop()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the client hung on a dead server"
    assert "generations" not in outcome
    message = str(outcome["error"])
    assert "after retries" in message and ("Connection" in message or "RemoteDisconnected" in message), message
    assert time.monotonic() - started < 30
    assert json.dumps(message)  # a plain message a job record can keep
