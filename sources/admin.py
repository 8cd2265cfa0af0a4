from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from core.admin_numbers import rounded
from core.forms import JSON_FORMFIELD_OVERRIDES
from core.roles import is_curator
from core.services.estimation import start_estimation_run
from runtime.jobs import dispatch_job
from sources.claim_loading import ClaimExtractionUnavailable, start_claim_load, start_text_claim_extraction
from sources.forms import ClaimLoadForm, DocumentAdminForm, UploadDocumentsForm
from sources.links import http_url
from sources.models import Claim, Document, Source
from sources.services import start_upload_ingest


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin[Source]):
    list_display = (
        "name",
        "kind",
        "active",
        "reliability_display",
        "reliability_answers",
        "documents",
        "chunk_count",
        "reliability_updated_at",
    )
    list_filter = ("kind", "active")
    search_fields = ("name", "description", "homepage")
    readonly_fields = (
        "chunk_count",
        "reliability_rounded",
        "reliability_low_rounded",
        "reliability_high_rounded",
        "reliability_answers",
        "reliability_updated_at",
        "created_at",
        "updated_at",
    )
    # Estimated by runs, shown rounded and read-only (never edited by hand).
    exclude = ("reliability", "reliability_low", "reliability_high")
    reliability_rounded = rounded("reliability", "Reliability")
    reliability_low_rounded = rounded("reliability_low", "Reliability low")
    reliability_high_rounded = rounded("reliability_high", "Reliability high")
    actions = ["activate", "deactivate", "reembed", "start_estimation", "extract_claims_from_text"]
    change_list_template = "admin/sources/source/change_list.html"
    change_form_template = "admin/sources/source/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Source]:
        return super().get_queryset(request).annotate(document_total=Count("documents", distinct=True))

    def has_delete_permission(self, request: HttpRequest, obj: Source | None = None) -> bool:
        # Sources are never deleted (their runs, scores and votes refer to them): deactivate
        # instead. Without delete permission the admin offers no delete button nor bulk delete.
        return False

    @admin.display(description="Documents", ordering="document_total")
    def documents(self, source: Source) -> int:
        return getattr(source, "document_total", 0)

    @admin.display(description="Reliability", ordering="reliability")
    def reliability_display(self, source: Source) -> str:
        if source.reliability is None:
            return "—"
        return f"{source.reliability:.2f} [{source.reliability_low or 0:.2f}, {source.reliability_high or 0:.2f}]"

    @admin.action(description="Activate selected sources")
    def activate(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        changed = self._set_active(request, queryset, True)
        self.message_user(request, f"Activated {changed} source(s).", messages.SUCCESS)

    @admin.action(description="Deactivate selected sources")
    def deactivate(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        changed = self._set_active(request, queryset, False)
        self.message_user(request, f"Deactivated {changed} source(s).", messages.SUCCESS)

    def _set_active(self, request: HttpRequest, queryset: QuerySet[Source], active: bool) -> int:
        """Switch the sources that are not yet in that state, each with an entry in its admin
        history (who, when, what), as a change made on its own page would have."""
        changing = list(queryset.exclude(active=active))
        Source.objects.filter(pk__in=[s.pk for s in changing]).update(active=active)
        for source in changing:
            self.log_change(request, source, [{"changed": {"fields": ["Active"]}}])
        return len(changing)

    @admin.action(description="Re-embed the chunks of selected sources")
    def reembed(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        job = dispatch_job(
            kind="reembed",
            task_name="tasks.reembed_source",
            params={"source_ids": [pk for pk in ids]},
            user=request.user,
            queue="ingest",
        )
        self.message_user(
            request,
            format_html('Re-embedding started: <a href="/jobs/{}/">job {}</a>', job.pk, job.pk),
            messages.SUCCESS,
        )

    @admin.action(description="Start an estimation run on the selected sources")
    def start_estimation(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        try:
            run = start_estimation_run(sources=list(queryset.order_by("id")), user=request.user)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                self.message_user(request, f"{field}: {' '.join(errors)}", messages.ERROR)
            return
        self.message_user(
            request,
            format_html(
                'Estimation run {} started on {} source(s): <a href="/jobs/{}/">job {}</a>',
                run.pk,
                queryset.count(),
                run.job_id,
                run.job_id,
            ),
            messages.SUCCESS,
        )

    @admin.action(description="Extract claims from the documents of selected sources (language model)")
    def extract_claims_from_text(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        """One tasks.extract_text_claims job per source, each noted in the source's history;
        without a language model configured, none (the same refusal for every source)."""
        started = []
        for source in queryset.order_by("id"):
            try:
                job = start_text_claim_extraction(source, user=request.user)
            except ClaimExtractionUnavailable as exc:
                self.message_user(request, str(exc), messages.ERROR)
                return
            self.log_change(request, source, f"Started claim extraction from its documents: job {job.pk}.")
            started.append((source, job))
        self.message_user(
            request,
            format_html(
                "Claim extraction from documents started for {} source{}: {}",
                len(started),
                pluralize(len(started)),
                format_html_join(
                    ", ",
                    '{} (<a href="{}">job {}</a>)',
                    ((s.name, reverse("job-detail", args=[j.pk]), j.pk) for s, j in started),
                ),
            ),
            messages.SUCCESS,
        )

    def get_urls(self) -> list[URLPattern]:
        extra = [path("upload/", self.admin_site.admin_view(self.upload_view), name="sources_source_upload")]
        return extra + super().get_urls()

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_change_permission(request):
            return redirect("admin:index")
        initial = {"source": request.GET.get("source")} if request.GET.get("source") else None
        form = UploadDocumentsForm(request.POST or None, request.FILES or None, initial=initial)
        if request.method == "POST" and form.is_valid():
            with transaction.atomic():  # a new source exists only with its accepted upload
                source = form.cleaned_data["source"] or Source.objects.create(
                    name=form.cleaned_data["new_source"], kind=form.cleaned_data["new_source_kind"] or "other"
                )
                if form.cleaned_data["source"] is None:
                    self.log_addition(request, source, [{"added": {}}])
                form.cleaned_data["source"] = source
                job = start_upload_ingest(
                    source,
                    form.cleaned_data["blobs"],
                    options={"mapping": form.cleaned_data["csv_mapping"]},
                    user=request.user,
                )
            # Which documents are new is known only once the job has compared them with those
            # held: the start says what was read, the job's headline then says "0 new, 3 already held".
            total = sum(form.cleaned_data["document_counts"])
            files = len(form.cleaned_data["blobs"])
            self.message_user(
                request,
                format_html(
                    "Ingestion into {} started: {} file{} with {} document{} to check against those already "
                    'held. <a href="{}">Job {}</a> tells how many are new.',
                    form.cleaned_data["source"].name,
                    files,
                    pluralize(files),
                    total,
                    pluralize(total),
                    reverse("job-detail", args=[job.pk]),
                    job.pk,
                ),
                messages.SUCCESS,
            )
            return redirect(reverse("admin:sources_source_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "title": "Upload documents",
            "opts": self.model._meta,
        }
        return render(request, "admin/sources/upload.html", context)


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin[Document]):
    form = DocumentAdminForm
    list_display = ("title", "source", "published_at", "ingested_at", "link")
    list_filter = ("source", "ingested_at")
    search_fields = ("title", "text", "url")
    list_select_related = ("source",)
    readonly_fields = ("content_hash", "ingested_at", "job")
    formfield_overrides = JSON_FORMFIELD_OVERRIDES
    date_hierarchy = "ingested_at"

    @admin.display(description="URL")
    def link(self, doc: Document) -> str:
        # Only an http(s) URL becomes a link; anything else stored (a javascript: URL from
        # before ingestion checked URLs) is shown as text, never as an href.
        href = http_url(doc.url)
        if href:
            return format_html('<a href="{}" rel="noopener noreferrer">link</a>', href)
        return format_html('<span title="{}">not a web link</span>', doc.url) if doc.url else "—"


@admin.register(Claim)
class ClaimAdmin(admin.ModelAdmin[Claim]):
    """Claims, and the "Load claims" view: structured files through a claim mapping (curators)."""

    list_display = ("subject", "attribute", "value", "source", "method", "updated_at")
    list_filter = ("method", "attribute", "source__kind")
    search_fields = ("subject", "value")
    list_select_related = ("source",)
    raw_id_fields = ("source", "document")
    readonly_fields = ("provenance", "job", "created_at", "updated_at")
    show_full_result_count = False  # a COUNT(*) over millions of claims on every page is wasted
    change_list_template = "admin/sources/claim/change_list.html"

    def get_urls(self) -> list[URLPattern]:
        extra = [path("load/", self.admin_site.admin_view(self.load_view), name="sources_claim_load")]
        return extra + super().get_urls()

    def can_load(self, request: HttpRequest) -> bool:
        """Curators with the right to add claims (an analyst with admin access cannot load)."""
        return is_curator(request.user) and self.has_add_permission(request)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, object] | None = None) -> HttpResponse:
        context = {**(extra_context or {}), "can_load_claims": self.can_load(request)}
        return super().changelist_view(request, extra_context=context)

    def load_view(self, request: HttpRequest) -> HttpResponse:
        if not self.can_load(request):
            raise PermissionDenied("Only curators load claims.")
        initial = {"source": request.GET.get("source")} if request.GET.get("source") else None
        form = ClaimLoadForm(request.POST or None, request.FILES or None, initial=initial)
        if request.method == "POST" and form.is_valid():
            job = start_claim_load(
                form.cleaned_data["blobs"],
                form.cleaned_data["mapping"],
                source=form.cleaned_data.get("source"),
                format_name=form.cleaned_data.get("format") or None,
                user=request.user,
                validate=False,  # the form has just parsed every file
            )
            self.message_user(
                request,
                f"Loading {sum(form.cleaned_data['claim_counts'])} claim(s) from "
                f"{len(form.cleaned_data['blobs'])} file(s): job {job.pk}.",
                messages.SUCCESS,
            )
            return redirect(reverse("job-detail", args=[job.pk]))
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "title": "Load claims",
            "opts": self.model._meta,
        }
        return render(request, "admin/sources/claim/load.html", context)
