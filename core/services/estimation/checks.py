"""What a run's identification means to its readers, and the checks a curator answers.

A run whose estimate agreement does not identify (core.engine.reliability.identify) stores
which sources formed the two groups, the disputed queries and the checks proposed. Here:

- ``identification_view(run)``: names for the groups, the proposed queries, and each
  query's distinct answers (its clusters, with the sources behind each), for the run page,
  the checks page and the API;
- ``record_check(run, query, answer)``: a curator's reference answer for one proposed query
  (one click on an answer, or typed); it is added to the query's reference answers and to
  the run's allowed gold (``gold_query_ids``, when the run lists them), and the run is
  estimated again from its stored responses (no new generation): the run updates online;
- ``unsettled_view(run)``: a run that is not identified, for the claim pages: the group its
  estimate follows and every group it leaves unsettled (``unsettled_blocs``), each named;
- ``unsettled_run_of(source_ids)``: the unidentified run behind these sources' current
  reliabilities, if any (an answer that relies on it shows NOT_IDENTIFIED_MESSAGE).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TypedDict

from django.core.exceptions import ValidationError
from django.db import transaction

from core.engine.claims.normalize import get_normalizer, normalize_text
from core.engine.json_values import as_int, as_list, as_object
from core.engine.text import answer_contains_gold, is_idk
from core.engine.types import JSONObject
from core.models import ClaimResolution, EstimationRun, FactQuery, RunResponse, validate_question_bytes
from core.services.estimation.claim_runs import checked_values, resume_claim_run
from core.services.estimation.finish import usable_references
from core.services.estimation.start import SUPERSEDED_MESSAGE, resume_estimation_run, superseded
from core.services.topics import topic_choices
from runtime.users import Actor
from sources.models import Claim, Source

MAX_ANSWER_CHARS = 2000
MAX_CHECKED_SHOWN = 50  # checked queries listed on a run's checks page (the count shows them all)
MAX_OPTIONS = 6  # answers offered per query (the most supported first)


class NamedSource(TypedDict):
    id: int
    name: str


class AnswerOption(TypedDict):
    """One distinct answer to a proposed check: its text, the sources behind it, how many."""

    answer: str
    sources: list[str]
    count: int


def _names(ids: list[int]) -> list[NamedSource]:
    names = dict(Source.objects.filter(pk__in=ids).values_list("id", "name"))
    return [{"id": i, "name": names.get(i, f"source {i}")} for i in ids]


def unsettled_blocs(stored: JSONObject) -> list[list[NamedSource]]:
    """Every group of sources that a stored identification leaves unsettled (each with its
    sources' names), largest first; a run stored before the identification listed them all
    (or a claim run that lists none) has its one dissenting group when it is not identified."""
    listed = [[as_int(i, "unsettled_blocs") for i in as_list(bloc)] for bloc in as_list(stored.get("unsettled_blocs"))]
    if not listed and stored.get("identified", True) is False and as_list(stored.get("dissent_bloc")):
        listed = [_ids(stored, "dissent_bloc")]
    names = dict(Source.objects.filter(pk__in={i for bloc in listed for i in bloc}).values_list("id", "name"))
    return [[{"id": i, "name": names.get(i, f"source {i}")} for i in bloc] for bloc in listed if bloc]


def unsettled_view(run: EstimationRun) -> dict[str, object] | None:
    """What a page about a run's results says when the run is not identified: the run, why,
    the group the estimate follows and every group it leaves unsettled; None when the run is
    identified or has no identification stored (the claim pages show it beside each value)."""
    stored: JSONObject = run.identification or {}
    if not stored or stored.get("identified", True) is not False:
        return None
    return {
        "run_id": run.pk,
        "reason": str(stored.get("reason", "")),
        "estimate_side": _names(_ids(stored, "estimate_side")),
        "unsettled_blocs": unsettled_blocs(stored),
        "checks": len(as_list(stored.get("checks"))),
    }


def _options(run: EstimationRun, query_ids: list[int]) -> dict[int, list[AnswerOption]]:
    """Per query: its distinct answers (clusters) with the sources behind each, most first."""
    rows = (
        RunResponse.objects.filter(run=run, query_id__in=query_ids, cluster__isnull=False, is_idk=False)
        .select_related("source")
        .order_by("query_id", "cluster", "source__name")
    )
    grouped: dict[int, dict[int, list[RunResponse]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        grouped[row.query_id][row.cluster].append(row)  # type: ignore[index]  # never None: cluster__isnull=False
    out: dict[int, list[AnswerOption]] = {}
    for query_id, clusters in grouped.items():
        options: list[AnswerOption] = []
        for members in clusters.values():
            texts = [m.response.strip() for m in members if m.response.strip()]
            label = min(set(texts), key=lambda t: (-texts.count(t), len(t), t)) if texts else ""
            options.append({"answer": label, "sources": sorted(m.source.name for m in members), "count": len(members)})
        out[query_id] = sorted(options, key=lambda o: (-o["count"], o["answer"]))[:MAX_OPTIONS]
    return out


def _ids(stored: JSONObject, key: str) -> list[int]:
    """The ids a stored identification lists under ``key`` (none when absent)."""
    return [as_int(i, key) for i in as_list(stored.get(key))]


def identification_view(run: EstimationRun) -> dict[str, object] | None:
    """The run's identification for a page or the API; None when the run has none stored."""
    stored: JSONObject = run.identification or {}
    if not stored:
        return None
    if run.kind == EstimationRun.Kind.CLAIMS:
        return _claim_identification_view(run, stored)
    checks = _ids(stored, "checks")
    queries = {q.pk: q for q in FactQuery.objects.filter(pk__in=checks)}
    options = _options(run, checks)
    gold = [int(q) for q in (run.gold_queries or [])]
    checked = FactQuery.objects.filter(pk__in=gold).only("pk", "question", "reference_answers").order_by("pk")
    topics = topic_verdicts(run)
    return {
        **_groups(stored),
        "checks": [
            {
                "query_id": q,
                "question": queries[q].question,
                "references": usable_references(queries[q].reference_answers),
                "answers": options.get(q, []),
                # The topics whose open verdict proposed this query (none: the overall one's)
                "topics": [t["name"] for t in topics if q in t["checks"]],
            }
            for q in checks
            if q in queries
        ],
        "topics": topics,
        "topics_unsettled": any(not t["identified"] for t in topics),
        # The queries whose reference answers this run's estimate used (its gold queries: checks
        # recorded here and references given before), with their reference answers as they
        # stand now; a proposed check that was answered leaves the proposals at the re-estimate
        # and shows here instead.
        "checked": [
            {"query_id": q.pk, "question": q.question, "references": usable_references(q.reference_answers)}
            for q in checked[:MAX_CHECKED_SHOWN]
        ],
        "checked_total": checked.count(),
    }


class TopicVerdict(TypedDict):
    """One topic on which agreement leaves the estimate open: a group of sources outvoted there
    (or, when ``identified``, outvoted only because the other side is larger)."""

    key: str
    name: str
    identified: bool
    reason: str
    estimate_side: list[NamedSource]
    dissent_bloc: list[NamedSource]
    checks: list[int]


def topic_verdicts(run: EstimationRun) -> list[TopicVerdict]:
    """The topics of ``run`` whose own identification is open (stored under "topics" by
    finish.stored_identification), each named as the run's topics are; a topic whose verdict
    only repeats the overall one (the same two groups, settled the same way) is left out: the
    overall verdict says it already."""
    stored: JSONObject = run.identification or {}
    names = dict(topic_choices(run))

    def settled(verdict: JSONObject) -> tuple[set[int], set[int], bool, bool]:
        return (
            set(_ids(verdict, "estimate_side")),
            set(_ids(verdict, "dissent_bloc")),
            bool(verdict.get("identified", True)),
            bool(verdict.get("outnumbered", False)),
        )

    overall = settled(stored)
    out: list[TopicVerdict] = []
    for item in as_list(stored.get("topics")):
        verdict = as_object(item)
        key = str(verdict.get("key", ""))
        if settled(verdict) == overall:
            continue
        out.append(
            {
                "key": key,
                "name": names.get(key, key),
                "identified": bool(verdict.get("identified", True)),
                "reason": str(verdict.get("reason", "")),
                "estimate_side": _names(_ids(verdict, "estimate_side")),
                "dissent_bloc": _names(_ids(verdict, "dissent_bloc")),
                "checks": _ids(verdict, "checks"),
            }
        )
    return out


def _groups(stored: JSONObject) -> dict[str, object]:
    return {
        "identified": bool(stored.get("identified", True)),
        "reason": str(stored.get("reason", "")),
        "estimate_side": _names(_ids(stored, "estimate_side")),
        "dissent_bloc": _names(_ids(stored, "dissent_bloc")),
        "unsettled_blocs": unsettled_blocs(stored),
        "agreement": stored.get("agreement", [0.0, 0.0]),
        "disputed": len(as_list(stored.get("contested"))),
        "settled_by_gold": as_int(stored.get("settled_by_gold", 0), "settled_by_gold"),
    }


def _claim_identification_view(run: EstimationRun, stored: JSONObject) -> dict[str, object]:
    """A claim run's identification: its checks are items (a flight's departure time), each
    offered with the values the sources claim; "checked" lists the values a curator gave."""
    checks = _ids(stored, "checks")
    rows = {r.pk: r for r in ClaimResolution.objects.filter(run=run, pk__in=checks)}
    source_ids = {int(i) for r in rows.values() for v in r.values for i in v.get("sources", [])}
    names = dict(Source.objects.filter(pk__in=source_ids).values_list("id", "name"))
    checked = checked_values(run)

    exact = _exact_values([rows[pk] for pk in checks if pk in rows], source_ids)

    def options(row: ClaimResolution) -> list[AnswerOption]:
        # A check asks for the exact value (the estimate compares values exactly), so values the
        # run shows as one within the mapping's tolerance (07:21 and 07:22) are offered apart.
        split = exact.get((row.subject, row.attribute), {})
        out: list[AnswerOption] = []
        for v in row.values:
            value, members = str(v.get("value", "")), [int(i) for i in v.get("sources", [])]
            by_value: dict[str, list[int]] = {value: members}
            if v.get("spellings"):
                by_value = defaultdict(list)
                for i in members:
                    by_value[split.get(i, value)].append(i)
            out += [
                {
                    "answer": spelling,
                    "sources": sorted(names.get(i, f"source {i}") for i in ids),
                    "count": len(ids),
                }
                for spelling, ids in by_value.items()
            ]
        return sorted(out, key=lambda o: (-o["count"], o["answer"]))[:MAX_OPTIONS]

    return {
        **_groups(stored),
        "claims": True,
        "checks": [
            {
                "query_id": pk,
                "question": f"{rows[pk].subject}: {rows[pk].attribute}",
                "references": [checked[(rows[pk].subject, rows[pk].attribute)]]
                if (rows[pk].subject, rows[pk].attribute) in checked
                else [],
                "answers": options(rows[pk]),
            }
            for pk in checks
            if pk in rows
        ],
        "checked": [
            {"query_id": None, "question": f"{subject}: {attribute}", "references": [value]}
            for (subject, attribute), value in list(checked.items())[:MAX_CHECKED_SHOWN]
        ],
        "checked_total": len(checked),
    }


def _exact_values(rows: list[ClaimResolution], source_ids: set[int]) -> dict[tuple[str, str], dict[int, str]]:
    """Per checked item, each source's exact claimed value (its first claim, as the run reads
    claims), for the sources the run counted on it."""
    items = {(r.subject, r.attribute) for r in rows}
    out: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    if not items:
        return out
    claims = Claim.objects.filter(
        subject__in={s for s, _ in items}, attribute__in={a for _, a in items}, source_id__in=source_ids
    ).order_by("pk")
    for subject, attribute, source_id, value in claims.values_list("subject", "attribute", "source_id", "value"):
        if (subject, attribute) in items:
            out[(subject, attribute)].setdefault(int(source_id), str(value))
    return out


NORMALIZERS = ("time", "date", "text", "number")


def _as_claimed(text: str, claimed: list[str]) -> str:
    """A typed value as the claims spell it: the claimed value it equals once normalised the
    way claims are ("7:10 PM" is the stored "19:10", "B7" the stored "b7"); else the typed
    text normalised as plain text (a value no site lists)."""
    candidates = [text]
    for name in NORMALIZERS:
        try:
            normalised = get_normalizer(name)(text)
        except ValueError:
            normalised = None
        if normalised:
            candidates.append(normalised)
    for candidate in candidates:
        for value in claimed:
            if candidate == value or candidate.casefold() == value.casefold():
                return value
    return normalize_text(text) or text


def _checked_text(
    run: EstimationRun, check_id: int, answer: str, *, not_proposed: str, noun: tuple[str, str], newer: str
) -> str:
    """The checked answer's text, whitespace collapsed, once the check may be recorded: it is
    one of the run's proposed checks (else ``not_proposed`` on "query"), the answer is given,
    not "I don't know" and within the size caps (on "answer": ``noun`` is ("An answer",
    "answer") or ("A value", "value")), the run has not failed and no newer run has estimated
    its sources (``newer``, on "run"). Raises ValidationError naming the field otherwise."""
    article, word = noun
    if int(check_id) not in {int(q) for q in (run.identification or {}).get("checks", [])}:
        raise ValidationError({"query": not_proposed})
    text = " ".join(str(answer or "").split())
    if not text or is_idk(text):
        raise ValidationError({"answer": f"Give the right {word} (choose one, or type it)."})
    if len(text) > MAX_ANSWER_CHARS:
        raise ValidationError({"answer": f"{article} is at most {MAX_ANSWER_CHARS} characters."})
    try:
        validate_question_bytes(text, what=article)
    except ValidationError as exc:
        raise ValidationError({"answer": exc.messages}) from exc
    if run.state == EstimationRun.State.FAILED:
        raise ValidationError({"run": "The run failed: resume it before answering its checks."})
    if superseded(run):
        raise ValidationError({"run": f"{newer}: answer the checks of the latest run instead."})
    return text


def record_claim_check(run: EstimationRun, resolution_id: int, answer: str, *, user: Actor | None = None) -> bool:
    """A curator's true value for one of a claim run's proposed checks (an item); the run is
    resolved again with every value checked so far fixing its item. Returns whether the
    re-estimate started. Raises ValidationError naming the field, storing nothing."""
    text = _checked_text(
        run,
        resolution_id,
        answer,
        not_proposed="This item is not one of the run's proposed checks (the page may be stale).",
        noun=("A value", "value"),
        newer="A newer claim run has resolved these sources since",
    )
    with transaction.atomic():
        locked = EstimationRun.objects.select_for_update().get(pk=run.pk)
        row = ClaimResolution.objects.filter(run=locked, pk=resolution_id).first()
        if row is None:
            raise ValidationError({"query": "This item was resolved again since: reload the checks page."})
        claimed = [str(v.get("value", "")) for v in row.values]
        claimed += [str(s) for v in row.values for s in v.get("spellings") or [] if str(s) not in claimed]
        value = _as_claimed(text, claimed)
        gold = [g for g in locked.params.get("claim_gold") or [] if (g[0], g[1]) != (row.subject, row.attribute)]
        locked.params = {**locked.params, "claim_gold": [*gold, [row.subject, row.attribute, value]]}
        locked.save(update_fields=["params"])
    return reestimate_run(run, user=user)


def unsettled_run_of(source_ids: list[int]) -> EstimationRun | None:
    """The unidentified run that set the current reliability of any of these sources (a
    source's reliability comes from the run that last covered it: its finish time is the
    source's ``reliability_updated_at``); None when none did. One query."""
    stamps = Source.objects.filter(pk__in=source_ids, reliability_updated_at__isnull=False).values(
        "reliability_updated_at"
    )
    return (
        EstimationRun.objects.filter(
            state=EstimationRun.State.SUCCEEDED,
            kind=EstimationRun.Kind.FULL,
            finished_at__in=stamps,
            identification__identified=False,
        )
        .order_by("-finished_at", "-pk")
        .only("pk", "identification")
        .first()
    )


def record_check(run: EstimationRun, query_id: int, answer: str, *, user: Actor | None = None) -> bool:
    """A curator's reference answer for one of the run's proposed checks; re-estimates the run.
    Returns whether a re-estimate was started (False: the run is being estimated right now,
    or the user's concurrent runs are at their cap; the answer is recorded either way and
    counts at the next re-estimate, `reestimate_run`).

    Raises ValidationError naming the field, storing nothing: an answer that is empty, "I
    don't know" or too long; a query that is not one of the run's proposed checks (or was
    deleted); an answer that contradicts the query's stored reference answers (edit those in
    the admin); a failed run; a run whose sources a newer run has estimated since (its
    re-estimate would overwrite their current reliabilities)."""
    if run.kind == EstimationRun.Kind.CLAIMS:
        return record_claim_check(run, query_id, answer, user=user)
    text = _checked_text(
        run,
        query_id,
        answer,
        not_proposed="This query is not one of the run's proposed checks.",
        noun=("An answer", "answer"),
        newer="A newer run has estimated these sources since",
    )
    with transaction.atomic():
        locked = EstimationRun.objects.select_for_update().get(pk=run.pk)
        query = FactQuery.objects.select_for_update().filter(pk=query_id).first()
        if query is None:
            raise ValidationError({"query": "This query was deleted."})
        references = usable_references(query.reference_answers)
        matches = [r for r in references if answer_contains_gold(text, r) or answer_contains_gold(r, text)]
        if references and not matches:
            raise ValidationError(
                {
                    "answer": f"This query's reference answer is already recorded ({' / '.join(references)}) and "
                    "your answer does not match it: correct the query in the admin if the reference is wrong."
                }
            )
        if not references:
            query.reference_answers = [text]
            query.save(update_fields=["reference_answers"])
        listed = locked.params.get("gold_query_ids")
        if listed is not None and query.pk not in listed:
            locked.params = {**locked.params, "gold_query_ids": [*listed, query.pk]}
            locked.save(update_fields=["params"])
    return reestimate_run(run, user=user)


def reestimate_run(run: EstimationRun, *, user: Actor | None = None) -> bool:
    """Estimate the run again from its stored responses with the checks recorded so far;
    False (nothing started) while it is being estimated or the user is at the run cap.

    Raises ValidationError on "run" when a newer run has estimated its sources since (the
    re-estimate would overwrite their current reliabilities with this older run's)."""
    run = EstimationRun.objects.select_related("job").get(pk=run.pk)
    if superseded(run):
        raise ValidationError({"run": SUPERSEDED_MESSAGE})
    if run.job is not None and not run.job.finished:
        return False
    try:
        if run.kind == EstimationRun.Kind.CLAIMS:
            resume_claim_run(run, user=user, reestimate=True)
        else:
            resume_estimation_run(run, user=user, reestimate=True)
    except ValidationError:  # still running after all, or TooManyRuns (a ValidationError)
        return False
    return True
