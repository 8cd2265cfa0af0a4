"""The default (filesystem) broker never hands a reader a message that is still being
written: kombu's own transport creates the file under its final name and then writes it,
so a worker polling in between read an empty message and died ("Unrecoverable error:
JSONDecodeError"), which stopped the local-LLM profile's question worker and left an
estimation run waiting for its coordinator."""

from __future__ import annotations

from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from kombu import Connection
from kombu.transport import filesystem

from reliability_site import broker


def _channel(tmp_path: Path, transport: Any) -> Any:
    folder = tmp_path / "queue"
    folder.mkdir(exist_ok=True)
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False}
    conn = Connection("filesystem://", transport=transport, transport_options=options)
    return conn, conn.default_channel


def _read_while_writing(monkeypatch: pytest.MonkeyPatch, module: Any, channel: Any) -> list[Any]:
    """Put one message; at the moment its bytes are about to be written, let a reader poll."""
    seen: list[Any] = []
    original = module.str_to_bytes

    def write_hook(text: Any) -> bytes:
        try:
            seen.append(channel._get("questions"))
        except Empty:  # what the filesystem transport raises (queue.Empty)
            seen.append("empty")
        return bytes(original(text))

    monkeypatch.setattr(module, "str_to_bytes", write_hook)
    channel._put("questions", {"body": "x" * 10_000})
    monkeypatch.setattr(module, "str_to_bytes", original)
    return seen


def test_a_reader_sees_no_message_until_it_is_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn, channel = _channel(tmp_path, "reliability_site.broker:Transport")
    with conn:
        assert _read_while_writing(monkeypatch, broker, channel) == ["empty"]
        assert channel._get("questions") == {"body": "x" * 10_000}  # then the whole message
        assert list((tmp_path / "queue").iterdir()) == []  # nothing left behind


def test_kombus_own_transport_hands_out_the_empty_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the transport above exists (if kombu fixes its writer, this fails and
    reliability_site/broker.py can go)."""
    conn, channel = _channel(tmp_path, "filesystem")
    with conn, pytest.raises(ValueError):  # JSONDecodeError: the reader took the empty file
        _read_while_writing(monkeypatch, filesystem, channel)


def test_the_default_broker_uses_it(tmp_path: Path) -> None:
    from reliability_site.celery import broker_settings

    assert broker_settings("", tmp_path)["broker_transport"] == "reliability_site.broker:Transport"
    # Another broker's options reset the transport, so the URL's scheme picks it again
    # (an update of a configuration that named the filesystem transport hung its worker).
    assert broker_settings("redis://127.0.0.1:6379/0", tmp_path)["broker_transport"] is None
    assert broker_settings("amqp://guest@127.0.0.1//", tmp_path, "p")["broker_transport"] is None
