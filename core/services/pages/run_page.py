"""A run's result section (its page, and the part of it the page polls while the run goes on):
the estimate's changes and scores, the agreement matrix with the reference answers beside it
(a documents run) or what the claims run resolved, copier groups and the topics that split
the sources most."""

from __future__ import annotations

from typing import Any

from core.models import EstimationRun
from core.services.estimation.checks import identification_view
from core.services.pages.copying import dependence_groups
from core.services.pages.runs import agreement_matrix, claim_run_summary, run_changes
from core.services.topics import widest_spreads

MATRIX_ROWS = 200  # the heat map shows at most this many queries; the API has them all


def is_finished(run: EstimationRun) -> bool:
    return run.effective_state in (EstimationRun.State.SUCCEEDED, EstimationRun.State.FAILED)


def run_result(run: EstimationRun, *, curator: bool) -> dict[str, Any]:
    """The result section's data; ``curator``: whether the viewer may resume a failed run
    (its stored responses are kept) and record checks."""
    succeeded = run.state == EstimationRun.State.SUCCEEDED
    context: dict[str, Any] = {
        "run": run,
        "finished": is_finished(run),
        "can_resume": curator and run.effective_state == EstimationRun.State.FAILED,
        "is_claims": run.kind == EstimationRun.Kind.CLAIMS,
        "identification": identification_view(run) if succeeded else None,
        "is_curator": curator,
    }
    if not succeeded:
        return context
    changes = run_changes(run)
    context.update(
        changes=changes,
        copy_groups=dependence_groups(run),
        topic_spreads=widest_spreads(run, dict(run.sources.values_list("id", "name"))) if run.topics else [],
        topic_names=[t["name"] for t in run.topics.get("model", {}).get("topics", [])],
        scores=sorted(
            (c for c in changes["sources"] if c["status"] != "dropped"), key=lambda c: -(c["reliability"] or 0.0)
        ),
    )
    if context["is_claims"]:
        # A claim-level run has no responses (no agreement matrix): what it resolved instead.
        context["claims"] = claim_run_summary(run)
    else:
        context.update(_matrix(run))
    return context


def _matrix(run: EstimationRun) -> dict[str, Any]:
    """The agreement matrix's cells with their titles, and the estimate beside the reference
    answers: how many of the gold-checked queries it got right."""
    matrix = agreement_matrix(run, limit=MATRIX_ROWS)
    names = [s["name"] for s in matrix["sources"]]
    for row in matrix["rows"]:
        row["view_cells"] = [
            {"state": state or "none", "title": f"{name}: {response or 'no response'}"}
            for state, response, name in zip(row["cells"], row["responses"], names, strict=True)
        ]
    checked = [row for row in matrix["rows"] if row["references"]]
    return {
        "matrix": matrix,
        "reference_check": {
            "checked": len(checked),
            "matching": sum(1 for row in checked if row["matches_reference"]),
            "differing": sum(1 for row in checked if not row["matches_reference"]),
        },
    }
