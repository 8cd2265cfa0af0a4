"""python manage.py ingest --source NAME PATH... [--wait] [--kind KIND] [--mapping JSON]"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.engine.jsondepth import JsonTooDeep, loads_bounded
from core.engine.types import JSONObject
from runtime.jobs import JobRecord, wait_for
from sources.ingest import IngestError, expand_paths, parse_bytes, read_limited
from sources.models import Source
from sources.services import start_ingest_job


class Command(BaseCommand):
    help = "Ingest files or folders into a source, as a background job (the source is created if new)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="files or folders")
        parser.add_argument("--source", required=True, help="source name")
        parser.add_argument(
            "--kind", default=Source.Kind.OTHER, choices=Source.Kind.values, help="kind, for a new source"
        )
        parser.add_argument("--mapping", default="", help='CSV/JSON field mapping as JSON, e.g. {"text": "body"}')
        parser.add_argument("--format", default="", help="force an adapter (text, csv, json, jsonl, xml, jsonld)")
        parser.add_argument("--chunk-size", type=int, default=None, help="words per chunk")
        parser.add_argument("--chunk-overlap", type=int, default=None, help="overlapping words between chunks")
        parser.add_argument("--wait", action="store_true", help="block until the job ends; exit non-zero if it fails")
        parser.add_argument("--timeout", type=float, default=None, help="with --wait: give up after this many seconds")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            files = expand_paths(opts["paths"])
        except IngestError as exc:
            raise CommandError(str(exc)) from None
        if not files:
            raise CommandError("no supported files found")
        options: JSONObject = {}
        if opts["mapping"]:
            try:
                options["mapping"] = loads_bounded(opts["mapping"], settings.JSON_MAX_DEPTH)
            except json.JSONDecodeError as exc:
                raise CommandError(f"--mapping is not valid JSON: {exc.msg}") from None
            except JsonTooDeep as exc:
                raise CommandError(f"--mapping is not accepted: {exc.reason}") from None
        if opts["format"]:
            options["format"] = opts["format"]
        if opts["chunk_size"]:
            options["chunk_size"] = opts["chunk_size"]
        if opts["chunk_overlap"] is not None:
            options["chunk_overlap"] = opts["chunk_overlap"]
        rejected = self.rejected_files(files, options)
        if len(rejected) == len(files):
            # Nothing would be stored: say why, and create no source and no job.
            raise CommandError("nothing ingested, every file was rejected:\n" + "\n".join(rejected))
        for reason in rejected:
            self.stderr.write(f"rejected {reason}")
        source, created = Source.objects.get_or_create(name=opts["source"], defaults={"kind": opts["kind"]})
        job = start_ingest_job(source, files, options=options)
        self.stdout.write(
            f"{'Created source' if created else 'Source'} {source.name!r}; ingestion job {job.pk} queued for {len(files)} file(s)."
        )
        if not opts["wait"]:
            return
        self.wait_and_report(job, opts)

    @staticmethod
    def rejected_files(files: list[Path], options: JSONObject) -> list[str]:
        """Parse every file now (cheap, no model), as the upload form and the API do: the
        reason for each file the worker would reject whole."""
        rejected: list[str] = []
        for path in files:
            try:
                parse_bytes(read_limited(path), path.name, options)
            except IngestError as exc:
                rejected.append(str(exc.located(path.name)))
            except OSError as exc:
                rejected.append(f"{path.name}: cannot be read ({exc.strerror or exc})")
        return rejected

    def wait_and_report(self, job: JobRecord, opts: dict[str, Any]) -> None:
        job = wait_for(job, timeout=opts["timeout"])
        if not job.finished:
            raise CommandError(f"job {job.pk} still {job.state} after {opts['timeout']} s: {job.message}")
        if not job.succeeded:
            raise CommandError(f"job {job.pk} failed: {job.error}")
        result = job.result
        self.stdout.write(
            self.style.SUCCESS(
                f"job {job.pk} succeeded: {result.get('documents', 0)} new documents, {result.get('chunks', 0)} chunks, "
                f"{result.get('duplicates', 0)} already held"
            )
        )
