"""python manage.py ingest_claims FILE... --mapping JSON_OR_PATH [--source NAME] [--format FMT] [--sync]

Loads structured (CSV, TSV) and semi-structured (JSON, JSONL, XML, JSON-LD) files as claims
through a declarative claim mapping (core.engine.claims.mapping). Every file is parsed
first: one bad line rejects the whole load and nothing is stored. By default the load runs
as a background job and its id is printed; with --sync it runs here and the counts are
printed as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.engine.claims.mapping import ClaimMapping, MappingError
from core.engine.jsondepth import JsonTooDeep, loads_bounded
from sources.claim_loading import load_claims, start_claim_key_embedding, start_claim_load
from sources.ingest import IngestError, read_limited
from sources.ingest.claim_formats import CLAIM_EXTENSIONS, CLAIM_FORMATS

MAX_MAPPING_BYTES = 1024 * 1024


def read_mapping(value: str) -> ClaimMapping:
    """A claim mapping given inline as JSON, or as the path of a JSON file; CommandError says what is wrong."""
    text = value.strip()
    origin = "--mapping"
    if not text.startswith("{"):
        path = Path(value)
        if not path.is_file():
            raise CommandError(f"--mapping is neither a JSON object nor a readable file: {value!r}")
        if path.stat().st_size > MAX_MAPPING_BYTES:
            raise CommandError(f"--mapping file {path.name} is over {MAX_MAPPING_BYTES} bytes")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"--mapping file {path.name} cannot be read: {exc}") from None
        origin = f"--mapping file {path.name}"
    try:
        data = loads_bounded(text, settings.JSON_MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{origin} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except JsonTooDeep as exc:
        raise CommandError(f"{origin} is not accepted: {exc.reason}") from None
    try:
        return ClaimMapping.from_json(data)
    except MappingError as exc:
        raise CommandError(f"{origin}: {exc}") from None


def claim_files(paths: list[str]) -> list[Path]:
    """Files as given; folders walked for claim file extensions (sorted, so loads repeat)."""
    result: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            result.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in CLAIM_EXTENSIONS))
        elif path.is_file():
            result.append(path)
        else:
            raise CommandError(f"{raw}: no such file or folder")
    if not result:
        raise CommandError(f"no claim files found (extensions: {', '.join(CLAIM_EXTENSIONS)})")
    return result


class Command(BaseCommand):
    help = (
        "Load structured or semi-structured files as claims through a claim mapping, all or nothing "
        "(a background job, or here with --sync)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", help="files or folders")
        parser.add_argument(
            "--mapping",
            required=True,
            help='the claim mapping: JSON, e.g. {"subject": "flight", "source": "src", "attributes": {"dep": "time"}}, '
            "or the path of a JSON file",
        )
        parser.add_argument(
            "--source",
            default="",
            help="the source of every claim (created if new) when the mapping has no source field",
        )
        parser.add_argument("--format", default="", choices=["", *CLAIM_FORMATS], help="force a format")
        parser.add_argument("--sync", action="store_true", help="load here and print the counts as JSON")
        parser.add_argument(
            "--no-embed", action="store_true", help="with --sync: do not start the job that embeds the new claim keys"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        mapping = read_mapping(opts["mapping"])
        paths = claim_files(opts["files"])
        files = []
        for path in paths:
            try:
                files.append((path.name, read_limited(path)))
            except IngestError as exc:
                raise CommandError(f"rejected, nothing stored: {exc}") from None
            except OSError as exc:
                raise CommandError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
        source = opts["source"].strip() or None
        format_name = opts["format"] or None
        try:
            if opts["sync"]:
                result = load_claims(files, mapping, source=source, format_name=format_name)
            else:
                job = start_claim_load(files, mapping, source=source, format_name=format_name)
        except IngestError as exc:
            raise CommandError(f"rejected, nothing stored: {exc}") from None
        if not opts["sync"]:
            self.stdout.write(f"Claim load job {job.pk} queued for {len(files)} file(s).")
            return
        outcome: dict[str, int] = result.as_dict()
        if result.created and not opts["no_embed"]:
            outcome["embed_job"] = start_claim_key_embedding().pk
        self.stdout.write(json.dumps(outcome))
