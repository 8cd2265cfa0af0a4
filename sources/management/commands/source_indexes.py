"""List, build, drop and reconcile the per-source HNSW indexes (sources/vector_index.py).

    manage.py source_indexes                  # every source: chunks, index state, size
    manage.py source_indexes --reconcile      # build the missing ones, drop orphaned tables
    manage.py source_indexes --build ID [ID ...]
    manage.py source_indexes --drop ID [ID ...]

Builds run here, in this process (CREATE INDEX CONCURRENTLY: the product keeps serving).
"""

from __future__ import annotations

import builtins
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sources import vector_index
from sources.models import Source


class Command(BaseCommand):
    help = "List, build, drop and reconcile the per-source HNSW indexes."

    def add_arguments(self, parser: CommandParser) -> None:
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--reconcile", action="store_true", help="build missing indexes, drop orphaned tables")
        group.add_argument("--build", nargs="+", type=int, metavar="SOURCE_ID", help="(re)build these sources' indexes")
        group.add_argument("--drop", nargs="+", type=int, metavar="SOURCE_ID", help="drop these sources' indexes")
        parser.add_argument("--dry-run", action="store_true", help="with --reconcile: only say what would be done")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["reconcile"]:
            self.reconcile(dry_run=options["dry_run"])
        elif options["build"]:
            self.build(options["build"])
        elif options["drop"]:
            for source_id in options["drop"]:
                dropped = vector_index.drop(source_id)
                self.stdout.write(f"source {source_id}: {'dropped' if dropped else 'had no vector table'}")
        else:
            self.list()

    def list(self) -> None:
        rows = vector_index.status()
        self.stdout.write(
            f"Sources with at least {vector_index.min_chunks()} chunks get an HNSW index of their own; "
            "the others are searched exactly."
        )
        self.stdout.write(f"{'id':>6}  {'chunks':>9}  {'index':<9}  {'MiB':>8}  name")
        for row in rows:
            size = f"{row.size_bytes / 2**20:.1f}" if row.size_bytes else ""
            self.stdout.write(f"{row.source_id:>6}  {row.chunks:>9}  {row.state:<9}  {size:>8}  {row.name}")

    def build(self, source_ids: builtins.list[int]) -> None:  # builtins: this class has a list method
        missing = sorted(set(source_ids) - set(Source.objects.filter(pk__in=source_ids).values_list("pk", flat=True)))
        if missing:
            raise CommandError(f"--build: no source with id {', '.join(map(str, missing))}")
        for source_id in source_ids:
            self.stdout.write(vector_index.build(source_id, rebuild=True).message)

    def reconcile(self, *, dry_run: bool) -> None:
        to_build, to_drop = vector_index.plan_reconcile()
        if dry_run:
            self.stdout.write(f"would build: {to_build or 'none'}; would drop the tables of: {to_drop or 'none'}")
            return
        report = vector_index.reconcile(log=self.stdout.write)
        self.stdout.write(f"built {len(report.built)}, dropped {len(report.dropped)}, failed {len(report.failed)}")
        if report.failed:
            raise CommandError(f"{len(report.failed)} index build(s) failed: {report.failed}")
