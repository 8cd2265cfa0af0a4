"""Truth discovery methods compared on Flights and Books, and their evaluation.

Every method maps a claim set to one value per task and one estimated accuracy per source:
- majority vote (ties to the smallest value);
- IWMV, the engine's reliability estimator (``get_estimator("iwmv")`` from
  :mod:`core.engine.reliability`) on a tasks x sources matrix of per-task value indices;
- crowd-kit's DawidSkene and Wawa. Their label space is global, so values are recoded per
  task by descending popularity (0 = most claimed value); that keeps DawidSkene's
  confusion matrices small (the raw value space has thousands of labels);
- TruthFinder, the engine's :func:`core.engine.reliability.truthfinder.truthfinder` on the
  claims themselves (it takes a value similarity: Jaccard of author sets for Books);
- LTM, the Latent Truth Model (Zhao et al., VLDB 2012; :mod:`core.bench.ltm`), a published
  baseline: collapsed Gibbs sampling of every (item, value) fact's truth with each source's
  sensitivity and false-positive rate; a source's accuracy is its sensitivity.
A source's estimated accuracy is the method's own score where it has one (IWMV w_i,
Wawa skill, TruthFinder t(w)); otherwise its agreement with the method's truths.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from core.bench.crowd import dawid_skene_probas, wawa_fit_predict
from core.bench.ltm import ltm
from core.bench.metrics import correlations
from core.bench.truth import ClaimSet, Task, group_by_task
from core.engine.claims.normalize import set_similarity
from core.engine.reliability.truthfinder import exact_similarity, truthfinder

TRUTH_METHODS = ("majority-vote", "iwmv", "dawid-skene", "wawa", "truthfinder", "ltm", "onecoin", "accucopy")


@dataclass
class TruthOutput:
    truths: dict[Task, str]
    source_accuracy: dict[str, float]


def _value_codes(claims: ClaimSet) -> tuple[dict[Task, list[str]], list[tuple[int, str, int]]]:
    """Per-task values by descending popularity; rows (task index, source, code)."""
    by_task = group_by_task(claims.claims)
    values: dict[Task, list[str]] = {}
    rows: list[tuple[int, str, int]] = []
    for t_index, (task, task_claims) in enumerate(sorted(by_task.items())):
        counts = Counter(c.value for c in task_claims)
        ordered = sorted(counts, key=lambda v: (-counts[v], v))
        values[task] = ordered
        code = {v: i for i, v in enumerate(ordered)}
        rows.extend((t_index, c.source, code[c.value]) for c in task_claims)
    return values, rows


def agreement_accuracy(claims: ClaimSet, truths: Mapping[Task, str]) -> dict[str, float]:
    hits: dict[str, list[int]] = {}
    for c in claims.claims:
        if c.task in truths:
            hits.setdefault(c.source, []).append(int(c.value == truths[c.task]))
    return {s: sum(h) / len(h) for s, h in hits.items()}


def majority_vote(claims: ClaimSet) -> TruthOutput:
    values, _rows = _value_codes(claims)
    truths = {task: ordered[0] for task, ordered in values.items()}
    return TruthOutput(truths, agreement_accuracy(claims, truths))


def iwmv_truths(claims: ClaimSet) -> TruthOutput:
    return estimator_truths(claims, "iwmv")


def estimator_truths(claims: ClaimSet, name: str) -> TruthOutput:
    """Any registered engine estimator, through the engine's claim resolution (the path the
    product's claim-level estimation runs take)."""
    from core.engine.claims.resolve import resolve_claims

    resolution = resolve_claims(
        [(c.source, c.task, c.value) for c in claims.claims], name, tolerances=claims.tolerances
    )
    truths = {(r.subject, r.attribute): r.value for r in resolution.items}
    return TruthOutput(truths, {s: rel.accuracy for s, rel in resolution.sources.items()})


def _crowdkit_frame(claims: ClaimSet):  # type: ignore[no-untyped-def]  # returns a pandas frame (pandas is untyped here)
    import pandas as pd

    values, rows = _value_codes(claims)
    tasks = sorted(values)
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    return frame, tasks, values


def dawid_skene(claims: ClaimSet) -> TruthOutput:
    frame, tasks, values = _crowdkit_frame(claims)
    probas = dawid_skene_probas(frame)
    truths: dict[Task, str] = {}
    for t, row in probas.iterrows():
        task = tasks[int(t)]
        # The label space is global: keep only the codes this task's claims actually use.
        allowed = [c for c in row.index if int(c) < len(values[task])]
        truths[task] = values[task][int(row[allowed].idxmax())]
    return TruthOutput(truths, agreement_accuracy(claims, truths))


def wawa(claims: ClaimSet) -> TruthOutput:
    frame, tasks, values = _crowdkit_frame(claims)
    labels, fitted_skills = wawa_fit_predict(frame)
    truths = {tasks[int(t)]: values[tasks[int(t)]][int(code)] for t, code in labels.items()}
    skills = {str(w): float(v) for w, v in fitted_skills.items()}
    return TruthOutput(truths, skills)


def truthfinder_truths(claims: ClaimSet) -> TruthOutput:
    # Flights: near times are often different wrong values, so only equal times imply each other.
    similarity = {"books": set_similarity}.get(claims.name, exact_similarity)
    result = truthfinder([(c.task, c.source, c.value) for c in claims.claims], similarity=similarity)
    return TruthOutput(result.truths, result.trust)


def ltm_truths(claims: ClaimSet) -> TruthOutput:
    result = ltm([(c.source, c.task, c.value) for c in claims.claims])
    return TruthOutput(result.truths, result.sensitivity)


METHODS: dict[str, Callable[[ClaimSet], TruthOutput]] = {
    "majority-vote": majority_vote,
    "iwmv": iwmv_truths,
    "dawid-skene": dawid_skene,
    "wawa": wawa,
    "truthfinder": truthfinder_truths,
    "ltm": ltm_truths,
    "onecoin": lambda claims: estimator_truths(claims, "onecoin"),
    "accucopy": lambda claims: estimator_truths(claims, "accucopy"),
}


def evaluate_truth_discovery(
    claims: ClaimSet, methods: tuple[str, ...] = TRUTH_METHODS, min_source_claims: int = 3
) -> dict[str, object]:
    """Accuracy on the labelled tasks and correlation of estimated with true source accuracy.

    The correlation is over sources with at least ``min_source_claims`` labelled claims: in
    Books most stores have one or two, and a true accuracy of 0 or 1 from one claim is noise.
    """
    true_acc = claims.true_source_accuracy(min_source_claims)
    results: dict[str, object] = {}
    labelled = [t for t in claims.gold if t in set(claims.tasks)]
    for name in methods:
        start = time.perf_counter()
        output = METHODS[name](claims)
        seconds = time.perf_counter() - start
        correct = sum(output.truths.get(t) == claims.gold[t] for t in labelled)
        scored = [s for s in true_acc if s in output.source_accuracy]
        corr = correlations([output.source_accuracy[s] for s in scored], [true_acc[s] for s in scored])
        results[name] = {
            "accuracy": correct / len(labelled) if labelled else 0.0,
            "correct": correct,
            "labelled_tasks": len(labelled),
            "source_pearson": corr["pearson"],
            "source_spearman": corr["spearman"],
            "seconds": seconds,
        }
    return {
        "dataset": claims.name,
        "claims": len(claims.claims),
        "sources": len(claims.sources),
        "tasks": len(claims.tasks),
        "sources_in_correlation": len(true_acc),
        "min_source_claims": min_source_claims,
        "methods": results,
    }
