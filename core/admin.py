"""Admin for query sets, fact-checking queries, estimation runs and asked questions."""

from __future__ import annotations

from typing import Any, TypeVar

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from core.admin_numbers import rounded
from core.forms import JSON_FORMFIELD_OVERRIDES, ReferenceAnswersField, TopicEditForm
from core.models import (
    AnswerFeedback,
    EstimationRun,
    FactQuery,
    QueryCollection,
    Question,
    ReliabilityScore,
    SourceDependence,
    SourceGroup,
    Vote,
    validate_question_bytes,
)
from core.services.feedback import FEEDBACK_QUERY_SET, confirm_feedback, reject_feedback
from core.services.topics import TopicEditError, merge_topics, rename_topic, topic_choices

_Child = TypeVar("_Child", bound=Model)
_Parent = TypeVar("_Parent", bound=Model)


class FactQueryForm(forms.ModelForm[FactQuery]):
    """Reference answers are edited one per line; the rest of the JSON fields as JSON."""

    reference_answers = ReferenceAnswersField()

    class Meta:
        model = FactQuery
        fields = ["query_set", "question", "reference_answers", "tags", "origin", "document"]

    def clean_question(self) -> str:
        question = str(self.cleaned_data.get("question") or "")
        validate_question_bytes(question)
        return question


class FactQueryInline(admin.TabularInline[FactQuery, QueryCollection]):
    model = FactQuery
    form = FactQueryForm
    fields = ("question", "reference_answers", "origin", "tags")
    formfield_overrides = JSON_FORMFIELD_OVERRIDES
    extra = 1
    show_change_link = True


class GoldCheckedFilter(admin.SimpleListFilter):
    title = "gold-checked"
    parameter_name = "gold"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[FactQuery]) -> list[tuple[str, str]]:
        return [("yes", "With reference answers"), ("no", "Without reference answers")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[FactQuery]) -> QuerySet[FactQuery]:
        if self.value() == "yes":
            return queryset.exclude(reference_answers=[])
        if self.value() == "no":
            return queryset.filter(reference_answers=[])
        return queryset


@admin.register(QueryCollection)
class QueryCollectionAdmin(admin.ModelAdmin[QueryCollection]):
    list_display = ("name", "query_count", "run_count", "created_at")
    search_fields = ("name", "description", "queries__question")
    inlines = [FactQueryInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[QueryCollection]:
        return (
            super()
            .get_queryset(request)
            .annotate(n_queries=Count("queries", distinct=True), n_runs=Count("runs", distinct=True))
        )

    @admin.display(description="Queries", ordering="n_queries")
    def query_count(self, obj: QueryCollection) -> int:
        return getattr(obj, "n_queries", 0)

    @admin.display(description="Runs", ordering="n_runs")
    def run_count(self, obj: QueryCollection) -> int:
        return getattr(obj, "n_runs", 0)


@admin.register(FactQuery)
class FactQueryAdmin(admin.ModelAdmin[FactQuery]):
    form = FactQueryForm
    list_display = ("question", "query_set", "answers", "origin", "document", "created_at")
    list_filter = ("query_set", "origin", GoldCheckedFilter)
    search_fields = ("question", "reference_answers", "tags")
    list_select_related = ("query_set", "document")
    raw_id_fields = ("document",)
    formfield_overrides = JSON_FORMFIELD_OVERRIDES

    @admin.display(description="Reference answers")
    def answers(self, obj: FactQuery) -> str:
        return ", ".join(str(a) for a in obj.reference_answers) or "—"


class ReadOnlyInline(admin.TabularInline[_Child, _Parent]):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class ReliabilityScoreInline(ReadOnlyInline[ReliabilityScore, EstimationRun]):
    model = ReliabilityScore
    reliability_rounded = rounded("reliability", "Reliability")
    weight_rounded = rounded("weight", "Weight")
    low_rounded = rounded("low", "Low")
    high_rounded = rounded("high", "High")
    fields = readonly_fields = (
        "source",
        "reliability_rounded",
        "weight_rounded",
        "low_rounded",
        "high_rounded",
        "answers",
        "agreements",
        "gold_answers",
        "gold_agreements",
    )
    ordering = ("-reliability",)


class SourceDependenceInline(ReadOnlyInline[SourceDependence, EstimationRun]):
    model = SourceDependence
    probability_rounded = rounded("probability", "Probability")
    same_true_rounded = rounded("same_true", "Same true", 1)
    same_false_rounded = rounded("same_false", "Same false", 1)
    fields = readonly_fields = (
        "source_a",
        "source_b",
        "probability_rounded",
        "shared",
        "same_true_rounded",
        "same_false_rounded",
        "different",
        "examples",
    )
    ordering = ("-probability",)
    verbose_name_plural = "Pairwise dependence (copying, collusion)"


@admin.register(EstimationRun)
class EstimationRunAdmin(admin.ModelAdmin[EstimationRun]):
    list_display = (
        "__str__",
        "kind",
        "state",
        "query_set",
        "source_count",
        "backend",
        "iterations",
        "converged",
        "job_link",
        "created_at",
        "finished_at",
        "topics_link",
    )
    list_filter = ("state", "kind", "converged", "query_set", "backend", "created_at")
    search_fields = ("query_set__name", "sources__name", "backend")
    list_select_related = ("query_set", "job")
    readonly_fields = (
        "state",
        "kind",
        "parent",
        "gold_queries",
        "backend",
        "iterations",
        "converged",
        "job",
        "created_by",
        "created_at",
        "finished_at",
    )
    filter_horizontal = ("sources",)
    formfield_overrides = JSON_FORMFIELD_OVERRIDES
    date_hierarchy = "created_at"
    inlines = [ReliabilityScoreInline, SourceDependenceInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[EstimationRun]:
        return super().get_queryset(request).annotate(n_sources=Count("sources", distinct=True))

    @admin.display(description="Sources", ordering="n_sources")
    def source_count(self, run: EstimationRun) -> int:
        return getattr(run, "n_sources", 0)

    @admin.display(description="Job")
    def job_link(self, run: EstimationRun) -> str:
        if run.job is None:
            return "—"
        return format_html('<a href="/jobs/{}/">job {} ({})</a>', run.job_id, run.job_id, run.job.state)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs start from the Sources list action, the dashboard, the API or `estimate`

    def get_urls(self) -> list[URLPattern]:
        extra = [
            path(
                "<int:pk>/topics/",
                self.admin_site.admin_view(self.topics_view),
                name="core_estimationrun_topics",
            )
        ]
        return extra + super().get_urls()

    @admin.display(description="Topics")
    def topics_link(self, run: EstimationRun) -> str:
        if not run.topics.get("model"):
            return "—"
        url = reverse("admin:core_estimationrun_topics", args=[run.pk])
        return format_html('<a href="{}">{} topics: rename or merge</a>', url, len(run.topics["model"]["topics"]))

    def topics_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """Rename a run's topic or merge two (later runs keep the names, core.engine.topics)."""
        run = get_object_or_404(EstimationRun, pk=pk)
        if not self.has_change_permission(request, run):
            raise PermissionDenied
        choices = topic_choices(run)
        form = TopicEditForm(request.POST or None, topics=choices)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                if data["action"] == "rename":
                    rename_topic(run, data["topic"], data["name"])
                else:
                    merge_topics(run, data["topic"], data["other"])
            except TopicEditError as exc:
                form.add_error(None, str(exc))
            else:
                self.log_change(request, run, [{"changed": {"fields": ["topics"]}}])
                messages.success(request, f"Run #{run.pk}: topics updated.")
                return redirect("admin:core_estimationrun_topics", pk=run.pk)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Topics of run #{run.pk}",
            "run": run,
            "form": form,
            "topics": topic_choices(run),
        }
        return render(request, "admin/core/run_topics.html", context)


class VoteInline(ReadOnlyInline[Vote, Question]):
    model = Vote
    align_score_rounded = rounded("align_score", "Alignment")
    weight_rounded = rounded("weight", "Weight")
    reliability_rounded = rounded("reliability", "Reliability")
    fields = readonly_fields = (
        "rank",
        "source",
        "raw_response",
        "response",
        "filtered",
        "align_score_rounded",
        "cluster",
        "weight_rounded",
        "reliability_rounded",
    )


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin[Question]):
    list_display = (
        "short_text",
        "strategy",
        "answer",
        "confidence_display",
        "backend",
        "calls",
        "asked_by",
        "created_at",
    )
    list_filter = ("strategy", "backend", "created_at")
    search_fields = ("text", "answer")
    list_select_related = ("asked_by",)
    readonly_fields = (
        "follows",
        "standalone",
        "strategy",
        "params",
        "answer",
        "confidence_display",
        "backend",
        "clusters",
        "evidence",
        "graph",
        "trace",
        "source_selection",
        "calls",
        "tokens",
        "seconds_rounded",
        "notes",
        "job",
        "asked_by",
        "created_at",
        "answered_at",
    )
    date_hierarchy = "created_at"
    inlines = [VoteInline]
    exclude = ("confidence", "seconds")  # shown rounded (read-only) instead
    seconds_rounded = rounded("seconds", "Seconds", 1)

    @admin.display(description="Question", ordering="text")
    def short_text(self, q: Question) -> str:
        return q.text if len(q.text) <= 80 else q.text[:79] + "…"

    @admin.display(description="Confidence", ordering="confidence")
    def confidence_display(self, q: Question) -> str:
        return "—" if q.confidence is None else f"{q.confidence:.2f}"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # questions are asked from the dashboard, the API or `ask`


@admin.register(SourceGroup)
class SourceGroupAdmin(admin.ModelAdmin[SourceGroup]):
    """Saved choices of sources analysts can ask (the ask form's "Sources" section)."""

    list_display = ("name", "source_count", "owner", "shared", "created_at")
    list_filter = ("shared",)
    search_fields = ("name", "description", "sources__name")
    filter_horizontal = ("sources",)
    fields = ("name", "description", "sources", "owner", "shared")

    def get_queryset(self, request: HttpRequest) -> QuerySet[SourceGroup]:
        return super().get_queryset(request).select_related("owner").annotate(n_sources=Count("sources"))

    @admin.display(description="Sources", ordering="n_sources")
    def source_count(self, group: SourceGroup) -> int:
        return int(getattr(group, "n_sources", 0))

    def get_changeform_initial_data(
        self, request: HttpRequest
    ) -> dict[str, Any]:  # the stubs: str values; a pk is an int
        return {**super().get_changeform_initial_data(request), "owner": request.user.pk}


class FeedbackStatusFilter(admin.SimpleListFilter):
    title = "outcome"
    parameter_name = "outcome"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[AnswerFeedback]) -> list[tuple[str, str]]:
        return [("gold", "Became gold"), ("known-wrong", "Known wrong answer (no gold)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AnswerFeedback]) -> QuerySet[AnswerFeedback]:
        confirmed = queryset.filter(status=AnswerFeedback.Status.CONFIRMED)
        if self.value() == "gold":
            return confirmed.filter(gold_query__isnull=False)
        if self.value() == "known-wrong":
            return confirmed.filter(gold_query__isnull=True)
        return queryset


def feedback_update_offer() -> SafeString:
    """What a curator does next with confirmed answers: a run over the feedback set tests every
    source against them; once it has finished, "Ask again" on the question answers with the
    new reliabilities and says what changed."""
    query_set = QueryCollection.objects.filter(name=FEEDBACK_QUERY_SET).first()
    url = reverse("run-list") + "?start=1" + (f"&query_set={query_set.pk}" if query_set else "") + "#start-run"
    return format_html(
        'To use them, <a href="{}">start an estimation run over “{}”</a> (the form opens with the set chosen); '
        "once it has finished, “Ask again” on the question answers with the updated reliabilities and says "
        "what changed.",
        url,
        FEEDBACK_QUERY_SET,
    )


@admin.register(AnswerFeedback)
class AnswerFeedbackAdmin(admin.ModelAdmin[AnswerFeedback]):
    """Analysts' feedback on answers, for curators to confirm or reject (core.services.feedback):
    a confirmed right answer becomes a gold-checked query of the "Analyst feedback" set."""

    list_display = (
        "short_question",
        "kind",
        "source",
        "judged",
        "corrected_answer",
        "user",
        "status",
        "gold_link",
        "updated_at",
    )
    list_filter = ("status", "kind", FeedbackStatusFilter, "updated_at")
    search_fields = ("question__text", "answer", "corrected_answer", "comment", "user__username", "source__name")
    list_select_related = ("question", "source", "user", "gold_query")
    readonly_fields = (
        "question_link",
        "kind",
        "source",
        "answer",
        "corrected_answer",
        "comment",
        "user",
        "status",
        "reviewed_by",
        "reviewed_at",
        "gold_link",
        "gold_answer",
        "created_at",
        "updated_at",
    )
    fields = readonly_fields
    actions = ["confirm", "reject"]
    date_hierarchy = "updated_at"

    @admin.display(description="Question", ordering="question__text")
    def short_question(self, feedback: AnswerFeedback) -> str:
        text = feedback.question.text
        return text if len(text) <= 80 else text[:79] + "…"

    @admin.display(description="Question")
    def question_link(self, feedback: AnswerFeedback) -> str:
        return format_html(
            '<a href="/questions/{}/">#{} {}</a>', feedback.question_id, feedback.question_id, feedback.question.text
        )

    @admin.display(description="Answer judged", ordering="answer")
    def judged(self, feedback: AnswerFeedback) -> str:
        return feedback.answer if len(feedback.answer) <= 80 else feedback.answer[:79] + "…"

    @admin.display(description="Gold-checked query")
    def gold_link(self, feedback: AnswerFeedback) -> str:
        if feedback.gold_query_id is None:
            if feedback.status == AnswerFeedback.Status.CONFIRMED:
                return "known wrong answer (not used by estimation)"
            return "—"
        return format_html(
            '<a href="/admin/core/factquery/{}/change/">query #{}: “{}”</a>',
            feedback.gold_query_id,
            feedback.gold_query_id,
            feedback.gold_answer,
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # analysts give feedback from the answer page or the API

    def _review(self, request: HttpRequest, queryset: QuerySet[AnswerFeedback], confirm: bool) -> None:
        done, gold, refused = 0, 0, []
        for feedback in queryset.select_related("question").order_by("id"):
            try:
                if confirm:
                    gold += confirm_feedback(feedback, request.user) is not None
                else:
                    reject_feedback(feedback, request.user)
                done += 1
            except PermissionDenied as exc:
                self.message_user(request, str(exc), messages.ERROR)
                return
            except ValidationError as exc:
                refused.append(f"#{feedback.pk}: {' '.join(exc.messages)}")
        if done:
            verb = "Confirmed" if confirm else "Rejected"
            extra = f"; {gold} became gold-checked queries of the “Analyst feedback” set" if confirm else ""
            self.message_user(request, f"{verb} {done} feedback item(s){extra}.", messages.SUCCESS)
        if confirm and gold:
            self.message_user(request, feedback_update_offer(), messages.INFO)
        for line in refused:
            self.message_user(request, f"Not confirmed, {line}", messages.ERROR)

    @admin.action(description="Confirm: a right answer becomes a gold-checked query", permissions=["change"])
    def confirm(self, request: HttpRequest, queryset: QuerySet[AnswerFeedback]) -> None:
        self._review(request, queryset, confirm=True)

    @admin.action(description="Reject (takes back gold it made)", permissions=["change"])
    def reject(self, request: HttpRequest, queryset: QuerySet[AnswerFeedback]) -> None:
        self._review(request, queryset, confirm=False)
