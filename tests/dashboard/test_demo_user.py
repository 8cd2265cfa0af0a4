from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from django.contrib.auth import authenticate
from django.core.management import call_command

from core.roles import is_analyst, is_curator


def test_demo_users_get_their_roles_and_the_env_password(
    db: Any, settings: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    settings.DATA_DIR = tmp_path
    monkeypatch.setenv("DEMO_PASSWORD", "a demo password 42")
    out = io.StringIO()
    call_command("create_demo_user", stdout=out)
    assert "a demo password 42" in out.getvalue()
    analyst = authenticate(username="analyst", password="a demo password 42")
    curator = authenticate(username="curator", password="a demo password 42")
    assert analyst and is_analyst(analyst) and not is_curator(analyst)
    assert curator and is_curator(curator) and curator.is_staff


def test_a_generated_password_is_kept_across_calls(db: Any, settings: Any, tmp_path: Path, monkeypatch: Any) -> None:
    settings.DATA_DIR = tmp_path
    monkeypatch.delenv("DEMO_PASSWORD", raising=False)
    call_command("create_demo_user", stdout=io.StringIO())
    first = (tmp_path / "demo_credentials.txt").read_text()
    call_command("create_demo_user", stdout=io.StringIO())
    assert (tmp_path / "demo_credentials.txt").read_text() == first
    password = first.split("password: ")[1].strip()
    assert authenticate(username="curator", password=password) is not None
