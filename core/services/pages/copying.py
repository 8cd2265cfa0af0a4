"""Copying and collusion: the pairs of sources a run's estimator examined for copying, those
it found dependent (with the false answers they share as evidence), and their pairs and blocs,
as the run, source and conflicts pages show them."""

from __future__ import annotations

from typing import Any

from core.engine.graphs.blocs import components
from core.engine.reliability.base import MIN_SHARED_FALSE
from core.engine.steps.dependence import copy_groups
from core.models import EstimationRun, SourceDependence
from core.services.estimation.finish import DEPENDENT, detects_copying
from core.services.pages.run_sets import finished_full_runs, responses_run


def has_copy_detection(run: EstimationRun) -> bool:
    """Whether the run's estimator detects copying, so that its stored pairwise dependence (an
    update: its full run's) is the whole story: no pair stored means no copying detected."""
    return detects_copying(str(responses_run(run).params.get("estimator", "")))


def run_dependence(run: EstimationRun, min_probability: float = 0.0) -> list[dict[str, Any]]:
    """Every pair of sources the run's estimator examined for copying, most likely dependent
    first, with its evidence (an update's are its full run's). One query."""
    rows = (
        SourceDependence.objects.filter(run=responses_run(run), probability__gte=min_probability)
        .order_by("-probability", "source_a_id", "source_b_id")
        .values(
            "run_id",
            "source_a_id",
            "source_a__name",
            "source_b_id",
            "source_b__name",
            "probability",
            "shared",
            "same_true",
            "same_false",
            "different",
            "examples",
        )
    )
    return [
        {
            "run_id": r["run_id"],
            "source_a": r["source_a_id"],
            "source_a_name": r["source_a__name"],
            "source_b": r["source_b_id"],
            "source_b_name": r["source_b__name"],
            "probability": r["probability"],
            "shared": r["shared"],
            "same_true": r["same_true"],
            "same_false": r["same_false"],
            "different": r["different"],
            "examples": r["examples"] or [],
        }
        for r in rows
    ]


def dependent_pairs(run: EstimationRun) -> list[dict[str, Any]]:
    """The pairs detected as copying or colluding: probability >= DEPENDENT (0.5) and at least
    MIN_SHARED_FALSE false answers in common."""
    return [p for p in run_dependence(run, min_probability=DEPENDENT) if p["same_false"] >= MIN_SHARED_FALSE]


def identifying_run(run: EstimationRun) -> EstimationRun:
    """The run whose identification describes ``run``'s dependence: itself, or the full run an
    update (which stores none) rests on; its checks are the ones that settle it."""
    return run if run.identification else responses_run(run)


def unsettled(run: EstimationRun) -> bool:
    """Whether the run's estimate is one agreement does not identify (issue 26): then the
    answers its copy detection calls false are false only if the estimate's group of sources
    is right, and the pairs it finds dependent may be the honest group that the larger group
    outvotes; they are shown as an unsettled group, never as copiers, until checks settle it."""
    return (identifying_run(run).identification or {}).get("identified", True) is False


def latest_collusion() -> dict[int, dict[str, Any]]:
    """Source id -> the copier pair or bloc it belongs to in the latest finished run with copy
    detection: {"run_id", "kind", "others": [names], "shared_false", "probability"}. Empty when
    no such run found any. What the sources list and a source's page badge."""
    run = next((r for r in finished_full_runs()[:10] if has_copy_detection(r)), None)
    if run is None:
        return {}
    badges: dict[int, dict[str, Any]] = {}
    for group in dependence_groups(run):
        for member in group["members"]:
            badges[member["id"]] = {
                "run_id": run.pk,
                "kind": group["kind"],
                "others": [m["name"] for m in group["members"] if m["id"] != member["id"]],
                "shared_false": group["shared_false"],
                "probability": group["probability"],
                "unsettled": group["unsettled"],
            }
    return badges


def latest_copy_run() -> EstimationRun | None:
    """The latest finished full run whose estimator detects copying (what latest_copy_groups
    reads)."""
    return next((r for r in finished_full_runs()[:10] if has_copy_detection(r)), None)


def latest_copy_groups(run: EstimationRun | None = None) -> tuple[frozenset[int], ...]:
    """The source ids of each copier pair or bloc of ``run`` (default: latest_copy_run), as
    the sources list badges them (latest_collusion), leaving out an unsettled run's groups
    (they may be the honest group a larger bloc outvotes): the groups an answer counts once
    (core.engine.steps.dependence). Empty when no such run found any."""
    run = run or latest_copy_run()
    if run is None:
        return ()
    return copy_groups(
        (p["source_a"], p["source_b"])
        for group in dependence_groups(run)
        if not group["unsettled"]
        for p in group["pairs"]
    )


def dependence_groups(run: EstimationRun) -> list[dict[str, Any]]:
    """Detected copier pairs and blocs: the connected components of the pairs with probability
    >= DEPENDENT, each with its members, its pairs and its evidence (the shared false answers,
    at most five per pair), the most likely first; each says whether it is ``unsettled`` (the
    run's estimate is not identified: see ``unsettled``) and which run's checks settle it
    (an update's are its full run's). Two queries (more for an update: its full run)."""
    pairs = dependent_pairs(run)
    settling = identifying_run(run)
    open_question = unsettled(settling)
    names: dict[int, str] = {}
    for p in pairs:
        names[p["source_a"]], names[p["source_b"]] = p["source_a_name"], p["source_b_name"]
    groups = []
    for component in components(names, [(p["source_a"], p["source_b"]) for p in pairs]):
        members_pairs = [p for p in pairs if p["source_a"] in component]
        members = sorted(component, key=lambda s: names[s])
        groups.append(
            {
                "kind": "pair" if len(members) == 2 else "bloc",
                "members": [{"id": s, "name": names[s]} for s in members],
                "probability": max(p["probability"] for p in members_pairs),
                "pairs": members_pairs,
                "shared_false": sum(p["same_false"] for p in members_pairs),
                "unsettled": open_question,
                "checks_run_id": settling.pk,
            }
        )
    groups.sort(key=lambda g: (-g["probability"], -len(g["members"]), g["members"][0]["name"]))
    return groups
