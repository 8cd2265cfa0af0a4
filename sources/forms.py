"""The upload form: files are parsed here (no model needed) so bad input is refused at once."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings

from sources.ingest import SUPPORTED_EXTENSIONS, IngestError
from sources.ingest.base import ParsedDocument
from sources.models import Source
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
            mapping = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg}") from None
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


__all__ = ["ParsedDocument", "UploadDocumentsForm"]
