"""python manage.py truth_discovery {flights,books} [--estimator NAME] [--data-dir DIR] [--authority SITE ...] [--json]

Truth discovery through the product itself: load a public data set's file as claims with the
product's claim loading (``sources.claim_loading.load_claims``, the data set's mapping from
``core.bench.truth``; idempotent), start a claim-level estimation run over the data set's
sources and attributes and run its job to completion in this process (the Job record is
stored and shows the run's progress, as a worker's would), then score the resolved values
against the gold file. The benchmark's truth-discovery path
(``core.bench.truth_methods.estimator_truths``) reads the same file with the same mapping and
resolves the same matrix, so both report the same accuracy.

``--authority SITE`` (repeatable; a curator's setting, off by default): the named sites'
values fix the items they agree on, as checked values do (``resolve_claims``'s
``authorities``). The accuracy with authorities is a curator-assisted number, reported apart
from the no-gold one; the report lists them (``authorities``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.bench.paths import default_data_dir
from core.bench.truth import DATA_FILES, MAPPINGS, extract_claims, load_gold, read_records
from core.engine.claims.mapping import ClaimMapping
from core.engine.claims.tolerance import Tolerance
from core.engine.reliability import available_estimators
from core.engine.types import JSONObject
from core.models import ClaimResolution, EstimationRun, ReliabilityScore
from core.services.estimation import start_claim_run
from core.services.pages.copying import dependence_groups
from runtime.jobs import set_dispatcher
from runtime.users import Actor, signed_in
from sources.claim_loading import load_claims
from sources.models import Claim, Source
from tasks.engine_tasks import claim_estimation
from tasks.models import Job

# The claim format of each data set's file (Books' listing is a headerless TSV named .txt).
FORMATS = {"flights": "csv", "books": "tsv"}


@contextmanager
def jobs_run_here() -> Iterator[None]:
    """Jobs started meanwhile are stored but not sent to a broker: this process runs them."""

    def store_only(
        kind: str, task_name: str, params: JSONObject, /, *, user: Actor | None = None, queue: str | None = None
    ) -> Job:
        return Job.objects.create(
            kind=Job.Kind(kind),
            params=params,
            created_by=signed_in(user),
            message="Runs in the truth_discovery command's process",
        )

    previous = set_dispatcher(store_only)
    try:
        yield
    finally:
        set_dispatcher(previous)


def score(
    run: EstimationRun,
    gold: dict[tuple[str, str], str],
    items: set[tuple[str, str]],
    tolerances: Mapping[str, Tolerance] | None = None,
) -> JSONObject:
    """Accuracy on the labelled items, as the benchmark counts it: gold items that some claim
    of the run is about; an item the run left unresolved counts as wrong. ``accuracy`` is
    exact (the resolved value equals the gold, as the literature scores Flights);
    ``accuracy_within_tolerance`` also counts a value within the tolerance the data set's
    mapping declares (a minute for Flights' times) as right."""
    resolved = dict(
        ((subject, attribute), value)
        for subject, attribute, value in ClaimResolution.objects.filter(run=run).values_list(
            "subject", "attribute", "value"
        )
    )
    labelled = [item for item in gold if item in items]
    correct = sum(resolved.get(item) == gold[item] for item in labelled)
    close = sum(_close(resolved.get(item), gold[item], (tolerances or {}).get(item[1])) for item in labelled)
    return {
        "accuracy": correct / len(labelled) if labelled else 0.0,
        "correct": correct,
        "labelled": len(labelled),
        "accuracy_within_tolerance": close / len(labelled) if labelled else 0.0,
        "correct_within_tolerance": close,
    }


def _close(value: str | None, truth: str, tolerance: Tolerance | None) -> bool:
    if value is None:
        return False
    return value == truth or (tolerance is not None and tolerance.same(value, truth))


def verdict(run: EstimationRun) -> JSONObject:
    """What the run concluded about the sources: ``reliability`` (site name -> estimated
    accuracy), ``identified`` (false when agreement does not settle the estimate: every value
    was then resolved by a majority vote) and ``copying`` (the groups of sites found to copy
    one another, each a sorted list of names; empty while the run is unsettled, whose
    dependent groups are not called copiers), as the run's pages show them."""
    reliability = dict(
        ReliabilityScore.objects.filter(run=run).order_by("source__name").values_list("source__name", "reliability")
    )
    identified = bool((run.identification or {}).get("identified", True))
    groups = dependence_groups(run) if identified else []
    return {
        "identified": identified,
        "reliability": {name: round(float(value), 4) for name, value in reliability.items()},
        "copying": [sorted(m["name"] for m in g["members"]) for g in groups if not g["unsettled"]],
    }


class Command(BaseCommand):
    help = (
        "Load a truth-discovery data set (flights, books) as claims, resolve them with a claim-level "
        "estimation run, and score the resolved values against the gold file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", choices=sorted(MAPPINGS))
        parser.add_argument(
            "--estimator",
            choices=available_estimators(),
            default=None,
            help="reliability estimator (default: the RELIABILITY_ESTIMATOR setting)",
        )
        parser.add_argument(
            "--data-dir",
            default=None,
            help="folder holding flights/ and books/ (default: BENCH_DATA_DIR, else ../shared/data)",
        )
        parser.add_argument(
            "--authority",
            action="append",
            default=[],
            metavar="SITE",
            help="a site whose values fix the items it lists (a curator's setting; repeatable; default none)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **opts: Any) -> None:
        dataset: str = opts["dataset"]
        data_dir = Path(opts["data_dir"]) if opts["data_dir"] else default_data_dir()
        folder, name = DATA_FILES[dataset]
        path = data_dir / folder / name
        if not path.is_file():
            raise CommandError(f"No {dataset} data at {path}: pass --data-dir (the folder holding {folder}/).")
        try:
            gold = load_gold(dataset, data_dir)
        except OSError as exc:
            raise CommandError(f"Cannot read the {dataset} gold file: {exc}") from None
        mapping = MAPPINGS[dataset]

        started = time.perf_counter()
        loaded = self.load(name, path.read_bytes(), mapping, FORMATS[dataset])
        load_seconds = time.perf_counter() - started
        # The data set's sources: those its file names (a source may hold other claims too).
        names = sorted({str(c.source) for c in extract_claims(mapping, read_records(dataset, data_dir))})
        source_ids = list(Source.objects.filter(name__in=names).values_list("id", flat=True))
        if len(source_ids) != len(names):
            raise CommandError(f"{len(names) - len(source_ids)} source(s) of the file were not stored by the load.")
        attributes = [a.name for a in mapping.attributes]
        authorities: list[str] = sorted(set(opts["authority"]))
        unknown = [a for a in authorities if a not in names]
        if unknown:
            raise CommandError(f"--authority: not a site of the {dataset} file: {', '.join(unknown)}")
        authority_ids = list(Source.objects.filter(name__in=authorities).values_list("id", flat=True))

        started = time.perf_counter()
        run = self.estimate(source_ids, attributes, opts["estimator"], authority_ids)
        estimate_seconds = time.perf_counter() - started
        items = set(
            Claim.objects.filter(source_id__in=source_ids, attribute__in=attributes)
            .order_by()
            .values_list("subject", "attribute")
            .distinct()
        )
        report = {
            "dataset": dataset,
            "estimator": run.params["estimator"],
            "run_id": run.pk,
            "job_id": run.job_id,
            **score(run, gold, items, mapping.tolerances()),
            "items": len(items),
            "resolved": ClaimResolution.objects.filter(run=run).count(),
            "conflicting": ClaimResolution.objects.filter(run=run, conflicting=True).count(),
            "sources": len(source_ids),
            "claims": Claim.objects.filter(source_id__in=source_ids, attribute__in=attributes).count(),
            "load": loaded,
            "seconds": round(load_seconds + estimate_seconds, 3),
            "load_seconds": round(load_seconds, 3),
            "estimate_seconds": round(estimate_seconds, 3),
            **verdict(run),
            "authorities": authorities,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(report, ensure_ascii=False))
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"{dataset}: accuracy {report['accuracy']:.4f} ({report['correct']}/{report['labelled']} labelled items) "
                f"with {report['estimator']}"
            )
        )
        if report["correct_within_tolerance"] != report["correct"]:
            self.stdout.write(
                f"  within the mapping's tolerance: {report['accuracy_within_tolerance']:.4f} "
                f"({report['correct_within_tolerance']}/{report['labelled']})"
            )
        self.stdout.write(
            f"  {report['claims']} claims of {report['sources']} sources on {report['items']} items "
            f"({report['conflicting']} in conflict); run {run.pk}, job {run.job_id}"
        )
        self.stdout.write(f"  load {load_seconds:.1f} s, estimate {estimate_seconds:.1f} s")
        if not report["identified"]:
            self.stdout.write(
                f"  not identified by agreement: every item resolved by a majority vote; run {run.pk}'s checks page "
                "lists the items whose true values would settle it"
            )

    def load(self, name: str, blob: bytes, mapping: ClaimMapping, format_name: str) -> dict[str, int]:
        """The file through the product's claim loading (idempotent: a second load changes no row)."""
        try:
            result = load_claims(files=[(name, blob)], mapping=mapping, source=None, format_name=format_name)
        except ValueError as exc:  # IngestError: the file, line and field at fault; nothing stored
            raise CommandError(f"Loading {name} as claims failed: {exc}") from None
        return result.as_dict()

    def estimate(
        self, source_ids: list[int], attributes: list[str], estimator: str | None, authorities: list[int] | None = None
    ) -> EstimationRun:
        """Start the claim run and run its job here, to the end."""
        try:
            with jobs_run_here():
                run = start_claim_run(
                    source_ids=source_ids, estimator=estimator, attributes=attributes, authorities=authorities
                )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        assert run.job_id is not None
        claim_estimation.apply(kwargs={"job_id": run.job_id})
        job = Job.objects.get(pk=run.job_id)
        if not job.succeeded:
            raise CommandError(f"Claim run {run.pk} failed: {job.error or job.message}")
        run.refresh_from_db()
        return run
