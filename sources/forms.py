"""The upload form: files are parsed here (no model needed) so bad input is refused at once."""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib.admin.widgets import AdminURLFieldWidget

from core.engine.claims.mapping import ClaimMapping, MappingError
from core.engine.claims.normalize import NORMALIZER_HELP
from core.engine.jsondepth import JsonTooDeep, loads_bounded
from sources.claim_loading import validate_claim_uploads
from sources.ingest import SUPPORTED_EXTENSIONS, IngestError
from sources.ingest.base import ParsedDocument
from sources.ingest.claim_formats import CLAIM_EXTENSIONS, CLAIM_FORMATS
from sources.links import HTTP_URL_MESSAGE, MAX_URL_CHARS, is_http_url
from sources.models import Document, Source
from sources.services import validate_uploads


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    widget = MultipleFileInput

    def clean(self, data: object, initial: object = None) -> list[object]:
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


# A choice, or a group of choices under a label (what a select's optgroups are).
Choice = tuple[str, str | list[tuple[int, str]]]


def grouped_sources() -> list[Choice]:
    """The sources as choices grouped by kind (a busy instance holds hundreds: a flat list of
    them is hard to scan), each group by name; a blank choice first."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for pk, name, kind, active in Source.objects.order_by("name").values_list("pk", "name", "kind", "active"):
        groups.setdefault(kind, []).append((pk, name if active else f"{name} (inactive)"))
    labels = dict(Source.Kind.choices)
    blank: list[Choice] = [("", "---------")]
    return blank + [(labels.get(kind, kind), groups[kind]) for kind in sorted(groups, key=labels.get)]  # type: ignore[arg-type]  # every stored kind is a Kind choice: the key is a str


class UploadDocumentsForm(forms.Form):
    source = forms.TypedChoiceField(
        coerce=int, required=False, choices=grouped_sources, help_text="An existing source, or name a new one below."
    )
    new_source = forms.CharField(
        required=False,
        max_length=200,
        help_text="A new source for these documents: created with the upload, only if the files are accepted.",
    )
    new_source_kind = forms.ChoiceField(choices=Source.Kind.choices, initial=Source.Kind.OTHER, required=False)
    files = MultipleFileField(  # type: ignore[assignment]  # a declared field (the form's metaclass collects it), not BaseForm.files
        help_text="Supported: " + ", ".join(SUPPORTED_EXTENSIONS)
    )
    csv_mapping = forms.CharField(
        required=False,
        help_text='Optional JSON column mapping, e.g. {"text": "body", "title": "headline"}',
    )

    def clean_csv_mapping(self) -> dict[str, str]:
        raw = self.cleaned_data.get("csv_mapping") or ""
        if not raw.strip():
            return {}
        try:
            mapping = loads_bounded(raw, settings.JSON_MAX_DEPTH)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg}") from None
        except JsonTooDeep as exc:
            raise forms.ValidationError(f"Not accepted: {exc.reason}") from None
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            raise forms.ValidationError("Expected a JSON object of strings")
        return mapping

    def clean_new_source(self) -> str:
        name = " ".join((self.cleaned_data.get("new_source") or "").split())
        if "\x00" in name:
            raise forms.ValidationError("A source name cannot hold a NUL character.")
        if name and Source.objects.filter(name__iexact=name).exists():
            raise forms.ValidationError(f"A source named {name!r} exists already: choose it from the list above.")
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = cast("dict[str, Any]", super().clean())  # Form.clean returns cleaned_data
        chosen, new_name = cleaned.get("source"), cleaned.get("new_source")
        if chosen and new_name:
            raise forms.ValidationError("Choose an existing source or name a new one, not both.")
        if not chosen and not new_name and "new_source" not in self.errors:
            raise forms.ValidationError("Choose the source of these documents, or name a new one.")
        cleaned["source"] = Source.objects.filter(pk=chosen).first() if chosen else None
        if chosen and cleaned["source"] is None:
            raise forms.ValidationError("That source no longer exists.")
        files = cleaned.get("files") or []
        blobs: list[tuple[str, bytes]] = []
        for upload in files:
            if upload.size > settings.INGEST_MAX_FILE_BYTES:
                raise forms.ValidationError(f"{upload.name}: over the limit of {settings.INGEST_MAX_FILE_BYTES} bytes")
            blobs.append((upload.name, upload.read()))
        try:
            counts = validate_uploads(blobs, {"mapping": cleaned.get("csv_mapping") or {}})
        except IngestError as exc:
            raise forms.ValidationError(f"Rejected, nothing stored: {exc}") from None
        cleaned["blobs"] = blobs
        cleaned["document_counts"] = counts
        return cleaned


CLAIM_MAPPING_EXAMPLE = (
    '{"subject": "flight", "source": "src", '
    '"attributes": {"actual departure time": {"field": "act_dep_time", "normalizer": "time"}}}'
)


class ClaimLoadForm(forms.Form):
    """Load structured files as claims: every file is parsed here, through the mapping, so a
    bad line or a bad mapping is refused at once, with nothing stored and no job started."""

    files = MultipleFileField(  # type: ignore[assignment]  # a declared field (the form's metaclass collects it), not BaseForm.files
        help_text="Supported: " + ", ".join(CLAIM_EXTENSIONS)
    )
    mapping = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80, "spellcheck": "false"}),
        help_text="The claim mapping as JSON, e.g. "
        + CLAIM_MAPPING_EXAMPLE
        + ". Normalisers: "
        + "; ".join(f"{name}: {text}" for name, text in NORMALIZER_HELP.items()),
    )
    source = forms.ModelChoiceField(
        queryset=Source.objects.all(),
        required=False,
        help_text='The source of every claim, when the mapping has no "source" field naming each record\'s source.',
    )
    format = forms.ChoiceField(
        choices=[("", "From the file extension"), *((name, name) for name in CLAIM_FORMATS)],
        required=False,
        help_text='Force a format (a headerless tab-separated ".txt" file: tsv).',
    )

    def clean_mapping(self) -> ClaimMapping:
        raw = self.cleaned_data.get("mapping") or ""
        try:
            data = loads_bounded(raw, settings.JSON_MAX_DEPTH)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
        except JsonTooDeep as exc:
            raise forms.ValidationError(f"Not accepted: {exc.reason}") from None
        try:
            return ClaimMapping.from_json(data)
        except MappingError as exc:
            raise forms.ValidationError(f"Not a usable claim mapping: {exc}") from None

    def clean(self) -> dict[str, Any]:
        cleaned = cast("dict[str, Any]", super().clean())  # Form.clean returns cleaned_data
        mapping = cleaned.get("mapping")
        files = cleaned.get("files") or []
        if mapping is None or not files:
            return cleaned
        source = cleaned.get("source")
        if mapping.source is None and source is None:
            self.add_error("source", 'The mapping has no "source" field: choose the source the claims belong to.')
            return cleaned
        if mapping.source is not None and source is not None:
            self.add_error(
                "source", f"The mapping reads each record's source from {mapping.source!r}: leave the source empty."
            )
            return cleaned
        blobs: list[tuple[str, bytes]] = []
        for upload in files:
            if upload.size > settings.INGEST_MAX_FILE_BYTES:
                raise forms.ValidationError(f"{upload.name}: over the limit of {settings.INGEST_MAX_FILE_BYTES} bytes")
            blobs.append((upload.name, upload.read()))
        try:
            counts = validate_claim_uploads(blobs, mapping, source=source, format_name=cleaned.get("format") or None)
        except IngestError as exc:
            raise forms.ValidationError(f"Rejected, nothing stored: {exc}") from None
        cleaned["blobs"] = blobs
        cleaned["claim_counts"] = counts
        return cleaned


class DocumentAdminForm(forms.ModelForm[Document]):
    """The admin's document form: a URL is an absolute http(s) URL or nothing, as in ingestion."""

    url = forms.URLField(
        required=False, max_length=MAX_URL_CHARS, assume_scheme="https", widget=AdminURLFieldWidget(attrs={"size": 80})
    )

    class Meta:
        model = Document
        fields = ["source", "title", "text", "url", "published_at", "metadata", "job"]

    def clean_url(self) -> str:
        url: str = self.cleaned_data.get("url") or ""
        if url and not is_http_url(url):
            raise forms.ValidationError(HTTP_URL_MESSAGE[0].upper() + HTTP_URL_MESSAGE[1:] + ".")
        return url


__all__ = ["ClaimLoadForm", "DocumentAdminForm", "ParsedDocument", "UploadDocumentsForm"]
