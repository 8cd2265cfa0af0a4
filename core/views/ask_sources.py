"""The ask page's sources: the form's "Sources" section (read the analyst's choice: every
active source, only the ticked ones, all but the ticked ones, a saved group; offer what can
be chosen) and each source's progress while the question is answered."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F
from django.http import QueryDict

from core.models import Question
from core.services.source_selection import EXCLUDE, GROUP, INCLUDE, MAX_CHOSEN, SourceChoice, visible_groups
from sources.models import Source

MODES = ("all", "include", "exclude")
SOURCE_FORM_DEFAULTS: dict[str, Any] = {"sources_mode": "all", "sources": [], "source_group": ""}
SOURCE_ERROR_FIELDS = (INCLUDE, EXCLUDE, GROUP, "sources")


def _whole_numbers(values: list[str]) -> tuple[list[int], list[str]]:
    good, bad = [], []
    for value in values:
        try:
            good.append(int(value))
        except ValueError:
            bad.append(value)
    return good, bad


def source_choice_from_form(post: QueryDict) -> tuple[SourceChoice, dict[str, Any], dict[str, list[str]]]:
    """(the choice, the form's values to show again, errors by field). The ticked boxes
    ``sources`` mean "only these" or "all but these" by the radio ``sources_mode``;
    ``source_group`` is a group's id (empty: none)."""
    mode = post.get("sources_mode", "all")
    mode = mode if mode in MODES else "all"
    ticked, bad = _whole_numbers(post.getlist("sources"))
    # A follow-up's hidden copy of a question asked (through the API) with "only these" and
    # "never these" at once: the ids never to ask, whatever the mode. Read only with a follow-up;
    # a source deleted since then is dropped (excluding it again would change nothing).
    also_excluded: list[int] = []
    if post.get("follows"):
        also_excluded, bad_excluded = _whole_numbers(post.getlist("also_exclude")[:MAX_CHOSEN])
        bad += bad_excluded
        also_excluded = list(Source.objects.filter(pk__in=also_excluded).values_list("pk", flat=True))
    group_value = post.get("source_group", "").strip()
    form = {"sources_mode": mode, "sources": ticked, "source_group": group_value}
    errors: dict[str, list[str]] = {}
    if bad:
        errors["sources"] = [f"Not a source: {', '.join(repr(b[:20]) for b in bad[:3])}."]
    group: int | None = None
    if group_value:
        try:
            group = int(group_value)
        except ValueError:
            errors[GROUP] = ["Choose a group from the list."]
    if mode == "include" and not ticked and group is None:
        errors[INCLUDE] = ["Tick at least one source to ask only those (or choose “every active source”)."]
    choice = SourceChoice.of(
        include=ticked if mode == "include" else (),
        exclude=[*(ticked if mode == "exclude" else ()), *also_excluded],
        group=group,
    )
    return choice, form, errors


def source_picker(user: Any, form: dict[str, Any], errors: dict[str, list[str]]) -> dict[str, Any]:
    """What the Sources section offers: the active sources, most reliable first, the groups
    open to the user, and whether the section starts open (a choice made, or an error in it)."""
    sources = list(
        Source.objects.filter(active=True)
        .order_by(F("reliability").desc(nulls_last=True), "name")
        .only("id", "name", "reliability", "chunk_count")
    )
    groups = list(visible_groups(user).annotate(size=Count("sources")).order_by("name", "id"))
    source_errors = [m for field in SOURCE_ERROR_FIELDS for m in errors.get(field, [])]
    chosen = form.get("sources_mode", "all") != "all" or bool(form.get("source_group"))
    return {
        "ask_sources": sources,
        "source_groups": groups,
        "source_errors": source_errors,
        "sources_open": chosen or bool(source_errors),
    }


# How the running panel words each source's state (core.engine.strategies.SourceState).
PART_STATES = {
    "waiting": "waiting",
    "asking": "reading its passages…",
    "answered": "answered",
    "abstained": "said “I don't know”",
    "filtered": "its answer is not supported by its passages: counted as “I don't know”",
    "skipped": "not asked: enough sources had answered",
}


def source_progress(question: Question) -> list[dict[str, Any]]:
    """Each source's progress while the question is answered (the job's parts), in the
    order they were first reported, worded for the panel."""
    job = question.job
    parts = [p for p in ((job.parts if job is not None else None) or {}).values() if isinstance(p, dict)]
    out = []
    for part in sorted(parts, key=lambda p: (p.get("n", 0), str(p.get("label", "")))):
        state = str(part.get("state", ""))
        out.append(
            {
                "label": part.get("label", ""),
                "state": state,
                "text": PART_STATES.get(state, state),
                "detail": part.get("detail", "") if state == "answered" else "",
            }
        )
    return out
