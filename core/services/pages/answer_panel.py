"""A question's panel (the ask page polls it; a question's page shows it): while it is
answered, each source's progress and why it waits; once answered, the votes, the answer
groups and their graph, the plain-words explanation, the citations, the sources skipped,
the earlier answer to the same question and what a follow-up may ask."""

from __future__ import annotations

from typing import Any

from core.engine.graphs.conflict import cluster_graph
from core.models import Question, Vote
from core.services.asking import MAX_QUESTION_CHARS, conversation, waiting_reason
from core.services.explain import VoteFact, explain_votes
from core.services.pages.citations import citations
from core.services.pages.earlier_answers import earlier_answer
from core.services.pages.question import question_clusters
from core.services.source_selection import describe_selection, selection_seen_by
from runtime.users import Actor
from sources.models import Source

# Who looks at a page: a page's request.user (the signed-in user, or an anonymous visitor).

# How the running panel words each source's state (core.engine.strategies.SourceState).
PART_STATES = {
    "waiting": "waiting",
    "asking": "reading its passages…",
    "answered": "answered",
    "abstained": "said “I don't know”",
    "filtered": "its answer is not supported by its passages: counted as “I don't know”",
    "skipped": "not asked: enough sources had answered",
}


def is_finished(question: Question) -> bool:
    if question.job is not None:
        return bool(question.job.finished)
    return question.answered_at is not None


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


def skipped_sources(question: Question, votes: list[Vote]) -> list[str]:
    """The sources kappa-RRSS put in its visiting order but never consulted (kappa answers
    were found before reaching them), by name."""
    order = (question.trace or {}).get("visit_order") or []
    asked = {v.source_id for v in votes}
    ids = [sid for sid in order if isinstance(sid, int) and sid not in asked]
    names = dict(Source.objects.filter(pk__in=ids).values_list("id", "name"))
    return [names[sid] for sid in ids if sid in names]


def follow_up_sources(selection: dict[str, Any]) -> list[tuple[str, Any]] | None:
    """The hidden fields that make a follow-up ask the sources its question asked (the ask
    form's names: core.forms.ask), or None when it may not: another analyst's private group,
    whose sources this user may neither see nor ask (the page says so). Sources both
    included and excluded (possible through the API) travel as "only these" and "also_exclude"."""
    if not selection:
        return []
    if selection.get("private_group"):
        return None
    include = [s["id"] for s in selection.get("include") or [] if isinstance(s, dict) and "id" in s]
    exclude = [s["id"] for s in selection.get("exclude") or [] if isinstance(s, dict) and "id" in s]
    group = selection.get("group") or {}
    fields: list[tuple[str, Any]] = [("sources_mode", "include" if include else "exclude" if exclude else "all")]
    fields += [("sources", pk) for pk in include or exclude]
    if include:
        fields += [("also_exclude", pk) for pk in exclude]
    if group.get("id"):
        fields.append(("source_group", group["id"]))
    return fields


def answer_panel(question: Question, user: Actor) -> dict[str, Any]:
    """What the question's panel and permalink show to ``user`` (a private source group's name
    and sources only to those who may see it: selection_seen_by)."""
    selection = selection_seen_by(question.source_selection, user, asked_by_id=question.asked_by_id)
    context: dict[str, Any] = {
        "question": question,
        "finished": is_finished(question),
        "selection": describe_selection(selection),
    }
    if not context["finished"]:
        context["progress_sources"] = source_progress(question)
        context["waiting"] = waiting_reason(question)
        return context
    votes = list(question.votes.select_related("source").order_by("rank", "id"))
    clusters = question_clusters(question)
    labels = {c["id"]: c["label"] for c in clusters["clusters"]}
    chosen = next((c["id"] for c in clusters["clusters"] if c.get("chosen")), None)
    for vote in votes:
        vote.cluster_label = labels.get(vote.cluster, "")  # type: ignore[attr-defined]  # for the template
    skipped = skipped_sources(question, votes)
    cited = citations(question, votes, chosen)
    facts = [
        VoteFact(
            source=v.source.name,
            response=v.response,
            reliability=v.reliability,
            in_answer=chosen is not None and v.cluster == chosen,
            filtered=v.filtered,
            passages=len(v.passages or []),
        )
        for v in votes
    ]
    explanation = explain_votes(
        question.answer,
        facts,
        skipped=skipped,
        kappa=(question.params or {}).get("kappa"),
        evidence=None if votes else len(cited),
    )
    follow_ups = follow_up_sources(selection)
    answered = question.answered_at is not None and not (question.job is not None and question.job.state == "failed")
    context.update(
        votes=votes,
        clusters=clusters,
        graph=cluster_graph(clusters),
        explanation=explanation,
        citations=cited,
        skipped=skipped,
        earlier=earlier_answer(question),
        can_ask_again=not question.source_selection,
        can_follow_up=answered and follow_ups is not None,
        follow_up_private=answered and follow_ups is None,
        follow_up_sources=follow_ups or [],
        max_chars=MAX_QUESTION_CHARS,
    )
    return context


def conversation_page(question: Question, user: Actor, **extra: Any) -> dict[str, Any]:
    """A question's page: its panel and, for a follow-up, the earlier turns of its conversation."""
    return {**answer_panel(question, user), "turns": conversation(question), **extra}
