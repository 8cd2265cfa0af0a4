"""``python manage.py benchmark``: the RA-RAG benchmark on its own in-memory corpus.

A thin shell around :mod:`core.bench.cli`; it never reads or writes the web database.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from core.bench.cli import add_arguments, run


class Command(BaseCommand):
    help = "Run the multi-source RAG benchmark (PoisonedRAG, RAMDocs) or truth discovery (flights, books)."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        run(options)  # plain sys.stdout: the tables are already newline-terminated text
