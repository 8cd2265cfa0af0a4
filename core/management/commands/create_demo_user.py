"""Create the two demo accounts, "analyst" (analyst role) and "curator" (curator role, staff,
with the admin permissions on sources, documents, query sets and runs), and print their
credentials.

Each account has its own password: DEMO_ANALYST_PASSWORD / DEMO_CURATOR_PASSWORD when set,
else generated. A password is set only when the account is created (or with
--reset-passwords) and is kept in DATA_DIR/demo_credentials.txt (mode 600), so running the
command again (scripts/run.sh does on every start) prints the same credentials and never
changes a password or signs anyone out."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.roles import ANALYST, CURATOR

CURATOR_APPS = ("sources", "core", "tasks")
ACCOUNTS = (("analyst", ANALYST), ("curator", CURATOR))
CREDENTIALS_FILE = "demo_credentials.txt"
LEGACY_KEY = "password"  # the file's one shared password before each account had its own


def read_credentials(path: Path) -> dict[str, str]:
    """{"analyst": ..., "curator": ...} (and "password" from the old one-password format)."""
    if not path.exists():
        return {}
    stored = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition(": ")
        if sep and name in {*(username for username, _ in ACCOUNTS), LEGACY_KEY} and value.strip():
            stored[name] = value.strip()
    return stored


def write_credentials(path: Path, passwords: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Created with mode 600 (never readable by others, not even for a moment), kept so on rewrite.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.writelines(f"{username}: {password}\n" for username, password in passwords.items())
    path.chmod(0o600)


def new_password(taken: set[str]) -> str:
    while True:
        password = secrets.token_urlsafe(12)
        if password not in taken:
            return password


class Command(BaseCommand):
    help = "Create the demo users 'analyst' and 'curator' (each with its own password) and print their credentials."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset-passwords",
            action="store_true",
            help="Give both existing accounts new, different passwords (signs them out everywhere).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(settings.DATA_DIR) / CREDENTIALS_FILE
        stored = read_credentials(path)
        if os.environ.get("DEMO_PASSWORD"):
            self.stderr.write(
                "DEMO_PASSWORD is ignored: the demo accounts have separate passwords "
                "(DEMO_ANALYST_PASSWORD, DEMO_CURATOR_PASSWORD)."
            )
        wanted = {username: os.environ.get(f"DEMO_{username.upper()}_PASSWORD", "") for username, _ in ACCOUNTS}
        if wanted["analyst"] and wanted["analyst"] == wanted["curator"]:
            raise CommandError("DEMO_ANALYST_PASSWORD and DEMO_CURATOR_PASSWORD must differ.")

        users = get_user_model()
        known: dict[str, str] = {}  # the password of each account, where this command knows it
        for username, role in ACCOUNTS:
            user = users.objects.filter(username=username).first()
            if user is None or options["reset_passwords"]:
                password = wanted[username] or (stored.get(username) if user is None else "")
                if not password or password in known.values():
                    password = new_password(set(known.values()) | set(stored.values()))
                user = user or users(username=username, email=f"{username}@example.org")
                user.set_password(password)
                known[username] = password
            else:
                # An existing account keeps its password: report it only if it is still the one we kept.
                for candidate in (stored.get(username), stored.get(LEGACY_KEY)):
                    if candidate and user.check_password(candidate):
                        known[username] = candidate
                        break
            user.is_active = True
            user.is_staff = role == CURATOR
            user.save()
            user.groups.add(Group.objects.get_or_create(name=role)[0])
            if role == CURATOR:
                user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=CURATOR_APPS))

        write_credentials(path, known)
        for username, _ in ACCOUNTS:
            if username in known:
                self.stdout.write(f" Log in as {username} with password: {known[username]}")
            else:
                self.stdout.write(f" Log in as {username} with the password it already has (not changed)")
        self.stdout.write(f" (kept in {path})")
        if known.get("analyst") and known.get("analyst") == known.get("curator"):
            self.stdout.write(
                " The two accounts still share the password an earlier version gave them: "
                "`manage.py create_demo_user --reset-passwords` gives each its own."
            )
