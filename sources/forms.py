"""The upload form: files are parsed here (no model needed) so bad input is refused at once."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.widgets import AdminURLFieldWidget

from core.engine.jsondepth import JsonTooDeep, loads_bounded
from sources.ingest import SUPPORTED_EXTENSIONS, IngestError
from sources.ingest.base import ParsedDocument
from sources.links import HTTP_URL_MESSAGE, MAX_URL_CHARS, is_http_url
from sources.models import Document, Source
from sources.services import validate_uploads


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    widget = MultipleFileInput

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class UploadDocumentsForm(forms.Form):
    source = forms.ModelChoiceField(queryset=Source.objects.all())
    files = MultipleFileField(help_text="Supported: " + ", ".join(SUPPORTED_EXTENSIONS))
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

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
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


class DocumentAdminForm(forms.ModelForm):
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


__all__ = ["DocumentAdminForm", "ParsedDocument", "UploadDocumentsForm"]
