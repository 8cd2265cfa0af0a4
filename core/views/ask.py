"""Asking a question, watching it being answered, and the history of past questions."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from core.api.throttles import ask_rate, ask_throttle_wait
from core.engine.graphs.conflict import cluster_graph
from core.engine.params import describe
from core.engine.strategies import available_strategies, runnable_strategies, strategy_class
from core.engine.strategies.base import NO_CHUNK
from core.models import Question, asked_as_norm
from core.roles import analyst_required
from core.services.asking import MAX_QUESTION_CHARS, conversation, start_question, waiting_reason
from core.services.engine_context import configured_offers
from core.services.explain import VoteFact, explain_votes, highlight
from core.services.pages.question import question_clusters
from core.services.pages.runs import estimation_in_progress
from core.services.source_selection import describe_selection, selection_seen_by
from core.views.ask_sources import SOURCE_FORM_DEFAULTS, source_choice_from_form, source_picker, source_progress
from core.views.htmx import HtmxHttpRequest
from sources.models import Chunk, Source
from tasks.polling import render_poll

DEFAULT_STRATEGY = "ra-rag"
DEFAULT_KAPPA = 4
MAX_CITATIONS = 8


# What each main strategy does, in plain words for the ask page (the papers' terms, kappa-RRSS,
# f_align, WMV, are in the glossary and in each strategy's technical description, shown in
# the advanced panel).
PLAIN_WORDS = {
    "ra-rag": "Asks the most reliable sources that have something relevant, one by one, drops answers "
    "their own passages do not support, groups answers that mean the same, and lets reliable sources "
    "outvote unreliable ones.",
    "multirag": "Answers from structured data (claims such as a flight's departure time): gathers what every "
    "source claims about the item, keeps the values the sources agree on, and weighs each source's record.",
    "astute-rag": "Lets the language model write what it knows, sets it beside the retrieved passages, and "
    "keeps the answer that the most reliable, consistent group of them supports.",
    "crest-bbx": "Scores each retrieved passage by how well it agrees with the others, tells the language "
    "model which passages look credible, and keeps the answer most of its tries agree on.",
}


def strategy_groups(offers: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(product, research): the strategies the configured backends can run, split by their
    ``product`` flag (core.engine.strategies.base.AnswerStrategy), ra-rag first, each with its
    one-line description and whether it takes kappa. Oracle strategies are never runnable here."""
    names = runnable_strategies(configured_offers() if offers is None else offers)
    product: list[dict[str, Any]] = []
    research: list[dict[str, Any]] = []
    for name in sorted(names, key=lambda n: (n != DEFAULT_STRATEGY, n)):
        cls = strategy_class(name)
        entry = {
            "name": name,
            "description": cls.description,
            "plain": PLAIN_WORDS.get(name, cls.description),
            "kappa": "kappa" in {f["name"] for f in describe(cls.Params)},
        }
        (product if cls.product else research).append(entry)
    return product, research


def _question(pk: int) -> Question:
    return get_object_or_404(Question.objects.select_related("job", "asked_by"), pk=pk)


def _finished(question: Question) -> bool:
    if question.job is not None:
        return bool(question.job.finished)
    return question.answered_at is not None


def _skipped_sources(question: Question, votes: list[Any]) -> list[str]:
    """The sources kappa-RRSS put in its visiting order but never consulted (kappa answers
    were found before reaching them), by name."""
    order = (question.trace or {}).get("visit_order") or []
    asked = {v.source_id for v in votes}
    ids = [sid for sid in order if isinstance(sid, int) and sid not in asked]
    names = dict(Source.objects.filter(pk__in=ids).values_list("id", "name"))
    return [names[sid] for sid in ids if sid in names]


def _citations(question: Question, votes: list[Any], chosen: int | None) -> list[dict[str, Any]]:
    """The passages the answer rests on, numbered: those read by the sources of the winning
    cluster or, for strategies without per-source votes, the evidence marked used. Each
    carries the sentence to highlight (core.services.explain.highlight)."""
    passages: dict[int, dict[str, Any]] = {}
    for vote in votes:
        if chosen is None or vote.cluster != chosen or vote.filtered:
            continue
        for p in vote.passages or []:
            if p.get("chunk_id") and p["chunk_id"] not in passages:
                passages[p["chunk_id"]] = {**p, "source_name": vote.source.name}
    if not passages:
        used = [
            e["chunk_id"]
            for e in question.evidence or []
            if e.get("used") and e.get("chunk_id", NO_CHUNK) != NO_CHUNK and e.get("claim_id") is None
        ]
        chunks = Chunk.objects.filter(pk__in=used[: MAX_CITATIONS * 2]).select_related("document", "source")
        by_id = {c.pk: c for c in chunks}
        for cid in used:
            chunk = by_id.get(cid)
            if chunk is not None and cid not in passages:
                passages[cid] = {
                    "chunk_id": cid,
                    "document_id": chunk.document_id,
                    "title": chunk.document.title,
                    "url": chunk.document.url,
                    "text": chunk.text,
                    "source_name": chunk.source.name,
                }
    marked = [(p, highlight(p.get("text", ""), question.answer)) for p in passages.values()]
    # Cite the passages with a sentence to mark (they share words with the answer); the others
    # were read but do not support it (retrieval also returns passages about other things).
    supporting = [(p, mark) for p, mark in marked if mark.sentence] or marked
    return [{**p, "n": n, "mark": mark} for n, (p, mark) in enumerate(supporting[:MAX_CITATIONS], start=1)]


def _result_context(question: Question, user: Any) -> dict[str, Any]:
    """What the question's panel and permalink show to ``user`` (a private source group's name
    and sources only to those who may see it: selection_seen_by)."""
    selection = selection_seen_by(question.source_selection, user, asked_by_id=question.asked_by_id)
    context: dict[str, Any] = {
        "question": question,
        "finished": _finished(question),
        "selection": describe_selection(selection),
    }
    if not context["finished"]:
        context["progress_sources"] = source_progress(question)
        context["waiting"] = waiting_reason(question)
    if context["finished"]:
        votes = list(question.votes.select_related("source").order_by("rank", "id"))
        clusters = question_clusters(question)
        labels = {c["id"]: c["label"] for c in clusters["clusters"]}
        chosen = next((c["id"] for c in clusters["clusters"] if c.get("chosen")), None)
        for vote in votes:
            vote.cluster_label = labels.get(vote.cluster, "")  # type: ignore[attr-defined]  # for the template
        skipped = _skipped_sources(question, votes)
        citations = _citations(question, votes, chosen)
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
            evidence=None if votes else len(citations),
        )
        context.update(
            votes=votes,
            clusters=clusters,
            graph=cluster_graph(clusters),
            explanation=explanation,
            citations=citations,
            skipped=skipped,
            earlier=_earlier_answer(question),
            can_ask_again=not question.source_selection,
        )
        follow_up_sources = _follow_up_sources(selection)
        failed = question.job is not None and question.job.state == "failed"
        context.update(
            can_follow_up=question.answered_at is not None and not failed and follow_up_sources is not None,
            follow_up_private=question.answered_at is not None and not failed and follow_up_sources is None,
            follow_up_sources=follow_up_sources or [],
            max_chars=MAX_QUESTION_CHARS,
        )
    return context


def _follow_up_sources(selection: dict[str, Any]) -> list[tuple[str, Any]] | None:
    """The hidden fields that make a follow-up ask the sources its question asked (the ask
    form's names: core.views.ask_sources), or None when it may not: another analyst's private
    group, whose sources this user may neither see nor ask (the page says so). Sources both
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


def _conversation_context(question: Question, user: Any, **extra: Any) -> dict[str, Any]:
    """A question's page: its panel and, for a follow-up, the earlier turns of its conversation."""
    return {**_result_context(question, user), "turns": conversation(question), **extra}


def _earlier_answer(question: Question) -> dict[str, Any] | None:
    """The latest earlier answer to the same question (same words, case and spaces aside; a
    follow-up compared by its standalone rewrite, never by a bare "When was he born?") and
    whether this one differs from it: after a curator's checks or a new estimation run, asking
    again shows what changed."""
    earlier = (
        Question.objects.annotate(norm=asked_as_norm())
        .filter(norm=question.asked_as.strip().lower(), created_at__lt=question.created_at)
        .exclude(pk=question.pk)
        .exclude(answered_at=None)
        .order_by("-created_at", "-id")
        .only("id", "answer", "confidence", "created_at", "strategy")
        .first()
    )
    if earlier is None:
        return None
    same = (earlier.answer or "").strip().lower() == (question.answer or "").strip().lower()
    drift = abs((earlier.confidence or 0.0) - (question.confidence or 0.0))
    return {"question": earlier, "changed": not same, "confidence_moved": same and drift >= 0.05}


def _blank_form() -> dict[str, Any]:
    return {
        "text": "",
        "strategy": DEFAULT_STRATEGY,
        "research_strategy": "",
        "kappa": DEFAULT_KAPPA,
        "follows": "",
        **SOURCE_FORM_DEFAULTS,
    }


@analyst_required
@require_http_methods(["GET", "POST"])
def ask(request: HtmxHttpRequest) -> HttpResponse:
    form = _blank_form()
    errors: dict[str, list[str]] = {}
    if request.method == "POST" and (wait := ask_throttle_wait(request)) is not None:
        return _too_many_asks(request, wait)
    if request.method == "POST":
        # A research baseline chosen under "advanced" wins over the product strategy select.
        research_choice = request.POST.get("research_strategy", "").strip()
        form = {
            "text": request.POST.get("text", ""),
            "strategy": research_choice or request.POST.get("strategy") or DEFAULT_STRATEGY,
            "research_strategy": research_choice,
            "kappa": request.POST.get("kappa", "").strip(),
        }
        kappa: Any = None
        if form["kappa"]:
            try:
                kappa = int(form["kappa"])
            except ValueError:
                errors["kappa"] = ["kappa must be a whole number."]
        choice, source_form, source_errors = source_choice_from_form(request.POST)
        form.update(source_form)
        errors.update(source_errors)
        follows = request.POST.get("follows", "").strip()[:20]
        form["follows"] = follows
        if not errors:
            try:
                question = start_question(
                    form["text"],
                    strategy=form["strategy"],
                    kappa=kappa,
                    sources=choice,
                    user=request.user,
                    follows=follows or None,
                )
            except ValidationError as exc:
                errors = exc.message_dict if hasattr(exc, "error_dict") else {"text": exc.messages}
            else:
                if request.htmx and question.follows_id is not None:
                    # The follow-up replaces the page's conversation: earlier turns, then its panel
                    # (on a question's page, with the page's heading: it becomes the follow-up's page).
                    on_question_page = _current_url_name(request) == "question-detail"
                    template = "core/_question_page.html" if on_question_page else "core/_conversation.html"
                    context = _conversation_context(question, request.user)
                    # htmx sets the tab's title from a <title> in the response: the page is the follow-up's now.
                    context["swap_title"] = on_question_page
                    response = render(request, template, context)
                    response["HX-Push-Url"] = reverse("question-detail", args=[question.pk])
                    return response
                if request.htmx:
                    return render(request, "core/_question_panel.html", _result_context(question, request.user))
                return redirect("question-detail", pk=question.pk)
        if follows:
            return _follow_up_errors(request, follows, form, errors)
        if request.htmx:
            return render(request, "core/_ask_errors.html", {"errors": errors})
    return _ask_page(request, form, errors, status=400 if errors else 200)


def _follow_up_errors(
    request: HtmxHttpRequest, follows: str, form: dict[str, Any], errors: dict[str, list[str]]
) -> HttpResponse:
    """A follow-up that was not sent: with htmx, the errors go under its box (not over the
    conversation); without, the earlier question's page again with the box, the text typed
    and the errors (or the ask page when there is no such question to follow)."""
    earlier = (
        Question.objects.select_related("job", "asked_by").filter(pk=int(follows)).first()
        if follows.isdigit()
        else None
    )
    if request.htmx:
        response = render(request, "core/_ask_errors.html", {"errors": errors})
        response["HX-Retarget"] = "#follow-up-errors"
        response["HX-Reswap"] = "innerHTML"
        return response
    if earlier is None:
        return _ask_page(request, form, errors, status=400)
    context = _conversation_context(earlier, request.user, follow_up_text=form["text"], follow_up_errors=errors)
    return render(request, "core/question_detail.html", context, status=400)


def _ask_page(request: HttpRequest, form: dict[str, Any], errors: dict[str, list[str]], status: int) -> HttpResponse:
    # Only what the configured backends can run (e.g. no vanilla-llm with the offline reader).
    product, research = strategy_groups()
    recent = Question.objects.filter(asked_by=request.user).only("id", "text", "answer", "created_at")[:8]  # type: ignore[misc]  # signed in: analyst_required
    return render(
        request,
        "core/ask.html",
        {
            "product_strategies": product,
            "research_strategies": research,
            "form": form,
            "errors": errors,
            "recent": recent,
            "max_chars": MAX_QUESTION_CHARS,
            "estimation": estimation_in_progress(),
            **source_picker(request.user, form, errors),
        },
        status=status,
    )


def _too_many_asks(request: HtmxHttpRequest, wait: int) -> HttpResponse:
    """429 for an ask past the user's "ask" budget (shared with POST /api/questions/):
    nothing is stored; the message says when to ask again (and so does Retry-After)."""
    message = (
        f"You have asked too many questions in a short time (at most {ask_rate()}, counting the "
        f"questions asked through the API). Ask again in {wait} second{'s' if wait != 1 else ''}."
    )
    errors = {"text": [message]}
    if request.htmx:
        response = render(request, "core/_ask_errors.html", {"errors": errors}, status=429)
        if request.POST.get("follows"):
            response["HX-Retarget"] = "#follow-up-errors"
            response["HX-Reswap"] = "innerHTML"
    else:
        form = {**_blank_form(), "text": request.POST.get("text", "")}
        response = _ask_page(request, form, errors, status=429)
    response["Retry-After"] = str(wait)
    return response


def _current_url_name(request: HttpRequest) -> str:
    """The URL name of the page that sent this htmx request (its HX-Current-URL), or ""."""
    try:
        return resolve(urlsplit(request.headers.get("HX-Current-URL", "")).path).url_name or ""
    except Resolver404:
        return ""


def _is_at(request: HttpRequest, path: str) -> bool:
    """Whether the page that sent this htmx request (its HX-Current-URL) is at ``path``."""
    return urlsplit(request.headers.get("HX-Current-URL", "")).path == path


@analyst_required
def question_panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The result panel the ask page polls; 286 (htmx: stop polling) once answered."""
    question = _question(pk)
    context = _result_context(question, request.user)
    response = render_poll(request, "core/_question_panel.html", context, finished=context["finished"])
    permalink = reverse("question-detail", args=[question.pk])
    if context["finished"] and request.headers.get("HX-Request") and not _is_at(request, permalink):
        # The answer arrived: the address bar shows its permalink, so a reload keeps it (not
        # pushed again on the permalink page itself: Back would stay on the same address).
        response["HX-Push-Url"] = permalink
    return response


@analyst_required
def question_detail(request: HttpRequest, pk: int) -> HttpResponse:
    question = _question(pk)
    return render(request, "core/question_detail.html", _conversation_context(question, request.user))


def _parse_date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


@analyst_required
def history(request: HttpRequest) -> HttpResponse:
    """Past questions, newest first; the same question asked again (same text, ignoring case
    and surrounding spaces; a follow-up by its standalone rewrite) is one row, its latest
    asking, with how many times it was asked."""
    matching = Question.objects.annotate(norm=asked_as_norm())
    strategy = request.GET.get("strategy", "")
    if strategy:
        matching = matching.filter(strategy=strategy)
    q = request.GET.get("q", "").strip()[:200]
    if q:
        # The question or its answer: "Frankie Valli" finds the question it answered.
        matching = matching.filter(Q(text__icontains=q) | Q(answer__icontains=q) | Q(standalone__icontains=q))
    start, end = _parse_date(request.GET.get("from")), _parse_date(request.GET.get("to"))
    tz = timezone.get_current_timezone()
    if start:
        matching = matching.filter(created_at__gte=datetime.combine(start, time.min, tzinfo=tz))
    if end:
        matching = matching.filter(created_at__lte=datetime.combine(end, time.max, tzinfo=tz))
    same = matching.filter(norm=OuterRef("norm"))
    latest = same.order_by("-created_at", "-id").values("id")[:1]
    times = same.order_by().values("norm").annotate(n=Count("id")).values("n")
    questions = (
        matching.filter(pk=Subquery(latest))
        .select_related("asked_by", "job")
        .annotate(vote_count=Count("votes"), times_asked=Subquery(times, output_field=IntegerField()))
        .order_by("-created_at", "-id")
        .defer("params", "notes", "clusters")
    )
    page = Paginator(questions, 25).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "core/history.html",
        {
            "page": page,
            "strategies": available_strategies(),
            "strategy": strategy,
            "q": q,
            "start": start.isoformat() if start else "",
            "end": end.isoformat() if end else "",
            "query": query.urlencode(),
        },
    )
