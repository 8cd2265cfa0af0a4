"""python manage.py estimate [--queries SET] [--sources NAME ...] [--estimator NAME] [--no-gold | --gold N] [--wait] [--timeout S] [--json]
python manage.py estimate --claims [--sources NAME ...] [--estimator NAME] [--wait] [--timeout S] [--json]
python manage.py estimate --resume RUN_ID [--reestimate] [--wait] [--timeout S] [--json]"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.engine.reliability import available_estimators
from core.models import EstimationRun, QueryCollection
from core.services.estimation import (
    ALL_SOURCES,
    resume_claim_run,
    resume_estimation_run,
    run_scores,
    sources_for_names,
    start_claim_run,
    start_estimation_run,
)
from core.services.estimation.finish import usable_references
from core.services.estimation.start import default_query_set
from tasks.jobs import wait_for_job


class Command(BaseCommand):
    help = "Start an estimation run (a background job) of the sources' reliability over a query set."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--queries", default="", help='query set name (default: "demo", or the only set)')
        parser.add_argument(
            "--sources", nargs="+", default=None, help="source names (default: every active source with documents)"
        )
        parser.add_argument("--batch-size", type=int, default=None, help="(query, source) pairs per generation task")
        parser.add_argument(
            "--estimator",
            choices=available_estimators(),
            default=None,
            help="reliability estimator (default: the RELIABILITY_ESTIMATOR setting); see docs/architecture.md",
        )
        gold = parser.add_mutually_exclusive_group()
        gold.add_argument(
            "--no-gold",
            action="store_true",
            help="estimate from agreement alone: ignore the queries' reference answers (gold-checked queries)",
        )
        gold.add_argument(
            "--gold",
            type=int,
            default=None,
            metavar="N",
            help="use the reference answers of only N queries (spread over the set) as gold; the others are "
            "estimated from agreement alone, and a curator can add checks on the run's page",
        )
        parser.add_argument(
            "--claims",
            action="store_true",
            help="a claim-level run: resolve every (subject, attribute) of the sources' claims and estimate the "
            "sources from them (default sources: every active source that holds claims)",
        )
        parser.add_argument(
            "--resume",
            type=int,
            default=None,
            metavar="RUN_ID",
            help="resume a failed or interrupted run: keep its stored responses, generate the missing ones, estimate",
        )
        parser.add_argument(
            "--reestimate", action="store_true", help="with --resume: also accept a run that succeeded (estimate again)"
        )
        parser.add_argument("--wait", action="store_true", help="block until the run ends; exit non-zero if it fails")
        parser.add_argument("--timeout", type=float, default=None, help="with --wait: give up after this many seconds")
        parser.add_argument("--json", action="store_true", help="wait, then print the per-source scores as JSON")

    def handle(self, *args: Any, **opts: Any) -> None:
        run = self.resume(opts) if opts["resume"] is not None else self.start(opts)
        if not opts["json"]:
            verb = "resumed" if opts["resume"] is not None else "queued"
            scope = "claims" if run.kind == EstimationRun.Kind.CLAIMS else f"query set {run.query_set}"
            self.stdout.write(
                f"Estimation run {run.pk} {verb} (job {run.job_id}): {scope}, {run.sources.count()} source(s)."
            )
        if not (opts["wait"] or opts["json"]):
            return
        self.wait_and_report(run, opts)

    def resume(self, opts: dict[str, Any]) -> EstimationRun:
        run = EstimationRun.objects.filter(pk=opts["resume"]).first()
        if run is None:
            raise CommandError(f"No estimation run #{opts['resume']}.")
        try:
            if run.kind == EstimationRun.Kind.CLAIMS:
                return resume_claim_run(run, reestimate=opts["reestimate"])
            return resume_estimation_run(run, reestimate=opts["reestimate"])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.message_dict.get("run", exc.messages))) from None

    def start(self, opts: dict[str, Any]) -> EstimationRun:
        if opts["reestimate"]:
            raise CommandError("--reestimate goes with --resume RUN_ID.")
        if opts["claims"]:
            return self.start_claims(opts)
        try:
            query_set = None
            if opts["queries"]:
                query_set = QueryCollection.objects.filter(name=opts["queries"]).first()
                if query_set is None:
                    raise ValidationError({"queries": f"No query set named {opts['queries']!r}."})
            # The documented default: without --sources, every active source with documents (said explicitly).
            sources = list(sources_for_names(opts["sources"])) if opts["sources"] else ALL_SOURCES
            params: dict[str, Any] = {}
            if opts["batch_size"]:
                params["batch_size"] = opts["batch_size"]
            if opts["estimator"]:
                params["estimator"] = opts["estimator"]
            if opts["no_gold"]:
                params["use_gold"] = False
            if opts["gold"] is not None:
                if opts["gold"] < 0:
                    raise ValidationError({"gold": "--gold must be 0 or more."})
                params["gold_query_ids"] = spread_gold(query_set or default_query_set(), opts["gold"])
            return start_estimation_run(query_set=query_set, sources=sources, params=params)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None

    def start_claims(self, opts: dict[str, Any]) -> EstimationRun:
        for option in ("queries", "batch_size", "no_gold", "gold"):
            if opts[option]:
                raise CommandError(
                    f"--{option.replace('_', '-')} does not go with --claims (claim runs have no query set)."
                )
        try:
            source_ids = [s.pk for s in sources_for_names(opts["sources"])] if opts["sources"] else None
            return start_claim_run(source_ids=source_ids, estimator=opts["estimator"])
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None

    def wait_and_report(self, run: EstimationRun, opts: dict[str, Any]) -> None:
        if run.job_id is None:
            raise CommandError(f"run {run.pk} has no job to wait for.")
        job = wait_for_job(run.job_id, timeout=opts["timeout"])
        if not job.finished:
            raise CommandError(f"job {job.pk} still {job.state} after {opts['timeout']} s: {job.message}")
        if job.state == job.State.FAILED:
            raise CommandError(f"run {run.pk} failed: {job.error}")
        run.refresh_from_db()
        scores = run_scores(run)
        if opts["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "run": run.pk,
                        "state": run.state,
                        "query_set": str(run.query_set),
                        "backend": run.backend,
                        "iterations": run.iterations,
                        "converged": run.converged,
                        "scores": scores,
                    },
                    ensure_ascii=False,
                )
            )
            return
        estimator = run.params.get("estimator", "?")
        self.stdout.write(self.style.SUCCESS(f"run {run.pk} succeeded after {run.iterations} {estimator} iteration(s)"))
        self.stdout.write("  reliability = estimated accuracy w_i (shown); weight = voting weight v_i")
        for s in sorted(scores, key=lambda s: -s["reliability"]):
            self.stdout.write(
                f"  {s['source']:<30} reliability {s['reliability']:.3f} [{s['low']:.2f}, {s['high']:.2f}]  "
                f"weight {s['weight']:.3f}  ({s['agreements']}/{s['answers']} answers agree"
                + (f"; {s['gold_agreements']}/{s['gold_answers']} right on gold)" if s["gold_answers"] else ")")
            )


def spread_gold(query_set: QueryCollection | None, n: int) -> list[int]:
    """Ids of ``n`` queries of the set that carry reference answers, spread evenly over them
    (by id): reproducible, and not all from one end of the set."""
    if query_set is None or n <= 0:
        return []
    checked = [q.pk for q in query_set.queries.order_by("pk") if usable_references(q.reference_answers)]
    if n >= len(checked):
        return checked
    step = len(checked) / n
    return [checked[int(i * step)] for i in range(n)]
