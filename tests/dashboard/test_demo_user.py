from __future__ import annotations

import io
import stat
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.test import Client, RequestFactory

from core.roles import is_analyst, is_curator


def can_log_in(username: str, password: str) -> Any:
    # django-axes (the first authentication backend) needs the request it counts failures by.
    return authenticate(request=RequestFactory().post("/login/"), username=username, password=password)


def run_command(*args: str) -> str:
    out = io.StringIO()
    call_command("create_demo_user", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def kept_passwords(data_dir: Path) -> dict[str, str]:
    lines = (data_dir / "demo_credentials.txt").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines)


@pytest.fixture
def data_dir(settings: Any, tmp_path: Path, monkeypatch: Any) -> Path:
    settings.DATA_DIR = tmp_path
    for name in ("DEMO_PASSWORD", "DEMO_ANALYST_PASSWORD", "DEMO_CURATOR_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_each_demo_account_gets_its_role_and_its_own_password_from_the_environment(
    db: Any, data_dir: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("DEMO_ANALYST_PASSWORD", "analyst demo password 42")
    monkeypatch.setenv("DEMO_CURATOR_PASSWORD", "curator demo password 43")
    out = run_command()
    assert "analyst with password: analyst demo password 42" in out
    assert "curator with password: curator demo password 43" in out
    analyst = can_log_in("analyst", "analyst demo password 42")
    curator = can_log_in("curator", "curator demo password 43")
    assert analyst and is_analyst(analyst) and not is_curator(analyst)
    assert curator and is_curator(curator) and curator.is_staff
    assert can_log_in("curator", "analyst demo password 42") is None


def test_the_two_generated_passwords_differ_and_are_kept_in_a_private_file(db: Any, data_dir: Path) -> None:
    out = run_command()
    passwords = kept_passwords(data_dir)
    assert set(passwords) == {"analyst", "curator"}
    assert passwords["analyst"] != passwords["curator"]
    assert stat.S_IMODE((data_dir / "demo_credentials.txt").stat().st_mode) == 0o600
    for username, password in passwords.items():
        assert f"{username} with password: {password}" in out
        assert can_log_in(username, password) is not None


def test_running_the_command_again_keeps_the_passwords_and_signed_in_sessions(db: Any, data_dir: Path) -> None:
    run_command()
    first = kept_passwords(data_dir)
    hashes = dict(get_user_model().objects.values_list("username", "password"))
    browser = Client()
    browser.force_login(get_user_model().objects.get(username="curator"))
    assert browser.get("/").status_code == 200

    out = run_command()

    assert kept_passwords(data_dir) == first
    assert dict(get_user_model().objects.values_list("username", "password")) == hashes
    assert f"curator with password: {first['curator']}" in out
    assert browser.get("/").status_code == 200  # not signed out


def test_an_existing_accounts_password_is_never_reset(db: Any, data_dir: Path) -> None:
    get_user_model().objects.create_user("curator", password="chosen by the curator 7")
    out = run_command()
    assert can_log_in("curator", "chosen by the curator 7") is not None
    assert "curator with the password it already has" in out
    curator = get_user_model().objects.get(username="curator")
    assert is_curator(curator) and curator.is_staff  # the role is still given
    assert "curator" not in kept_passwords(data_dir)


def test_accounts_that_share_an_old_password_keep_it_until_asked_to_reset(db: Any, data_dir: Path) -> None:
    (data_dir / "demo_credentials.txt").write_text("users: analyst, curator\npassword: old shared secret 9\n")
    for username in ("analyst", "curator"):
        get_user_model().objects.create_user(username, password="old shared secret 9")
    assert "--reset-passwords" in run_command()
    assert can_log_in("analyst", "old shared secret 9") and can_log_in("curator", "old shared secret 9")

    out = run_command("--reset-passwords")

    passwords = kept_passwords(data_dir)
    assert passwords["analyst"] != passwords["curator"]
    assert "old shared secret 9" not in out
    assert can_log_in("analyst", passwords["analyst"]) and can_log_in("curator", passwords["curator"])
    assert can_log_in("curator", "old shared secret 9") is None
