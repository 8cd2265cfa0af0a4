"""`manage.py check --deploy` is clean in a production-like environment: HSTS, the TLS
redirect, secure cookies and the proxy's protocol header all come from the environment
(docs/operations.md, "Production settings"), while the local defaults stay plain http."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

TLS = {
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "TRUST_X_FORWARDED_PROTO": "true",
    "TRUSTED_PROXY_COUNT": "1",
}
DEPLOY_WARNINGS = ("security.W004", "security.W008", "security.W012", "security.W016")


def manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in TLS and k not in ("CACHE_URL", "REDIS_URL") and not k.startswith(("SECURE_", "DJANGO_"))
    }
    base.update(
        {
            "DJANGO_SETTINGS_MODULE": "reliability_site.settings",
            "DATA_DIR": str(tmp_path),
            # Never connected to by `check` (no --database): only keeps the embedded server off.
            "DATABASE_URL": "postgresql://deploy:check@127.0.0.1:9/unused",
            "SECRET_KEY": secrets.token_urlsafe(64),
            "DEBUG": "false",
            "ALLOWED_HOSTS": "rag.example.org",
            **env,
        }
    )
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=base, capture_output=True, text=True, timeout=300
    )


def test_check_deploy_is_clean_with_the_production_variables(tmp_path: Any) -> None:
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **TLS)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output


def test_the_local_defaults_stay_plain_http_so_check_deploy_names_what_to_turn_on(tmp_path: Any) -> None:
    result = manage(tmp_path, "check", "--deploy")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for code in DEPLOY_WARNINGS:
        assert code in output
    assert "security.W009" not in output  # the secret key is fine; only the TLS switches are off


def test_a_bad_value_for_a_tls_variable_stops_the_start_with_its_name(tmp_path: Any) -> None:
    result = manage(tmp_path, "check", SECURE_HSTS_SECONDS="one year")
    assert result.returncode != 0
    assert "SECURE_HSTS_SECONDS must be an integer" in result.stderr


def settings_in(tmp_path: Any, **env: str) -> dict[str, Any]:
    code = (
        "import json; from django.conf import settings as s; print(json.dumps({"
        "'num_proxies': s.REST_FRAMEWORK.get('NUM_PROXIES'), 'trusted': s.TRUSTED_PROXY_COUNT,"
        "'proto': s.SECURE_PROXY_SSL_HEADER, 'cache': s.CACHES['default']['BACKEND'],"
        "'location': s.CACHES['default']['LOCATION']}))"
    )
    result = manage(tmp_path, "shell", "-c", code, **env)
    assert result.returncode == 0, result.stderr
    settings: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return settings


def test_the_proxy_count_and_the_shared_cache_come_from_the_environment(tmp_path: Any) -> None:
    local = settings_in(tmp_path)
    assert (local["num_proxies"], local["trusted"], local["proto"]) == (0, 0, None)  # trust no header
    assert (local["cache"], local["location"]) == ("django.core.cache.backends.db.DatabaseCache", "django_cache")
    behind = settings_in(
        tmp_path, TRUSTED_PROXY_COUNT="2", TRUST_X_FORWARDED_PROTO="true", REDIS_URL="redis://cache:6379/1"
    )
    assert (behind["num_proxies"], behind["trusted"]) == (2, 2)
    assert behind["proto"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert (behind["cache"], behind["location"]) == (
        "django.core.cache.backends.redis.RedisCache",
        "redis://cache:6379/1",
    )
