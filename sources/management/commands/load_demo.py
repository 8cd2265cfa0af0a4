"""python manage.py load_demo [--wait]: the demo sources, their documents and a query set, and the
demo's structured data (a slice of the Flights data set) as claims, with their keys embedded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core.engine.claims.mapping import ClaimMapping
from core.models import FactQuery, QueryCollection
from runtime.jobs import wait_for
from sources.claim_loading import load_claims, start_claim_key_embedding
from sources.ingest import parse_bytes
from sources.models import Claim, Document, Source, content_hash
from sources.services import start_ingest_job

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo_data"
DEMO_QUERY_SET = "demo"
# The structured demo (scripts/build_demo_claims.py): 25 flights as listed by 10 flight sites.
DEMO_CLAIMS = "flights.csv"
DEMO_CLAIMS_MAPPING = "flights-mapping.json"


class Command(BaseCommand):
    help = "Create the demo sources (of differing reliability) and queue their ingestion."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--wait", action="store_true", help="block until every ingestion job ends")
        parser.add_argument("--timeout", type=float, default=900.0, help="with --wait: seconds to wait per job")

    def handle(self, *args: Any, **opts: Any) -> None:
        manifest = json.loads((DEMO_DIR / "manifest.json").read_text())
        queries = json.loads((DEMO_DIR / "queries.json").read_text())
        jobs = []
        with transaction.atomic():
            query_set, _ = QueryCollection.objects.get_or_create(
                name=DEMO_QUERY_SET,
                defaults={"description": "Fact-checking queries of the demo corpus (PoisonedRAG questions)."},
            )
            for item in queries["estimation"]:
                query, created = FactQuery.objects.get_or_create(
                    query_set=query_set,
                    question=item["question"],
                    defaults={"reference_answers": item["reference_answers"], "tags": item.get("tags", [])},
                )
                if not created and not query.reference_answers and item["reference_answers"]:
                    # A set loaded before the reference answers were used: give them to it
                    # (never overwriting what a curator set).
                    FactQuery.objects.filter(pk=query.pk).update(reference_answers=item["reference_answers"])
            for entry in manifest["sources"]:
                source, _ = Source.objects.get_or_create(
                    name=entry["name"], defaults={"kind": entry["kind"], "description": entry["description"]}
                )
                if not already_held(source, DEMO_DIR / entry["file"]):
                    jobs.append(start_ingest_job(source, [DEMO_DIR / entry["file"]]))
        claims = load_claims(
            [(DEMO_CLAIMS, (DEMO_DIR / DEMO_CLAIMS).read_bytes())],
            ClaimMapping.from_json(json.loads((DEMO_DIR / DEMO_CLAIMS_MAPPING).read_text())),
        )
        # Embed the claims' (subject, attribute) keys, so that questions find them (multirag).
        embedding = start_claim_key_embedding() if claims.created else None
        self.stdout.write(
            f"Demo claims: {Claim.objects.count()} claims from {DEMO_CLAIMS} "
            f"({claims.created} new){f'; key embedding job {embedding.pk} queued' if embedding else ''}."
        )
        queued = (
            f"ingestion jobs {', '.join(str(j.pk) for j in jobs)} queued" if jobs else "every document already held"
        )
        self.stdout.write(
            f"Demo: {len(manifest['sources'])} sources, query set {DEMO_QUERY_SET!r} with {query_set.queries.count()} "
            f"queries ({query_set.queries.exclude(reference_answers=[]).count()} with reference answers); {queued}."
        )
        if not opts["wait"]:
            return
        for job in jobs:
            job = wait_for(job, timeout=opts["timeout"])
            if not job.succeeded:
                raise CommandError(f"ingestion job {job.pk} did not succeed ({job.state}): {job.error or job.message}")
            self.stdout.write(f"  {job.params['source']}: {job.result.get('documents', 0)} new documents")
        if embedding is not None:
            embedding = wait_for(embedding, timeout=opts["timeout"])
            if not embedding.succeeded:
                raise CommandError(
                    f"claim key embedding job {embedding.pk} did not succeed ({embedding.state}): "
                    f"{embedding.error or embedding.message}"
                )
        self.stdout.write(self.style.SUCCESS("Demo corpus loaded."))


def already_held(source: Source, path: Path) -> bool:
    """Whether the source holds every document of its demo file already (a restart): no job
    then, so the run script's start does not queue re-checks behind other bulk work."""
    hashes = {content_hash(doc.text) for doc in parse_bytes(path.read_bytes(), path.name)}
    return bool(hashes) and Document.objects.filter(source=source, content_hash__in=hashes).count() >= len(hashes)
