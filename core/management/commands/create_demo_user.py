"""Create (or update) the two demo accounts: "analyst" (analyst role) and "curator"
(curator role, staff, with the admin permissions on sources, documents, query sets and
runs). The password comes from DEMO_PASSWORD, else one is generated once and kept in
DATA_DIR/demo_credentials.txt (mode 600) so restarts print the same credentials."""

from __future__ import annotations

import secrets
from os import environ
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand

from core.roles import ANALYST, CURATOR

CURATOR_APPS = ("sources", "core", "tasks")


def _password(path: Path) -> str:
    if environ.get("DEMO_PASSWORD"):
        return environ["DEMO_PASSWORD"]
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("password: "):
                return line.removeprefix("password: ").strip()
    return secrets.token_urlsafe(12)


class Command(BaseCommand):
    help = "Create or update the demo users 'analyst' and 'curator' and print their credentials."

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(settings.DATA_DIR) / "demo_credentials.txt"
        password = _password(path)
        users = get_user_model()
        for username, role in (("analyst", ANALYST), ("curator", CURATOR)):
            user, _ = users.objects.get_or_create(username=username, defaults={"email": f"{username}@example.org"})
            user.set_password(password)
            user.is_active = True
            user.is_staff = role == CURATOR
            user.save()
            user.groups.add(Group.objects.get_or_create(name=role)[0])
            if role == CURATOR:
                user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=CURATOR_APPS))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"users: analyst, curator\npassword: {password}\n")
        path.chmod(0o600)
        self.stdout.write(f" Log in as analyst or curator with password: {password}  (kept in {path})")
