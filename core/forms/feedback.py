"""An analyst's feedback on an answer ("right", "wrong", with a correction or a comment) or on
one source's vote ("this source is wrong here"). The form parses: which source, and whether
a correction or a comment was sent at all (a bare button sends neither, and the stored ones
are kept); the service (core.services.feedback.record_feedback) validates the rest."""

from __future__ import annotations

from django import forms

from core.forms.query import MAX_ID
from sources.models import Source


class FeedbackForm(forms.Form):
    kind = forms.CharField(required=False)
    source = forms.CharField(required=False)
    corrected_answer = forms.CharField(required=False, strip=False)
    comment = forms.CharField(required=False, strip=False)

    def clean_source(self) -> Source | None:
        raw = str(self.cleaned_data.get("source") or "").strip()
        if not raw:
            return None
        if not (raw.isascii() and raw.isdigit()):
            raise forms.ValidationError(f"source must be a source id, not {raw[:40]!r}.")
        number = int(raw)
        found = Source.objects.filter(pk=number).first() if 0 < number <= MAX_ID else None
        if found is None:
            raise forms.ValidationError(f"There is no source #{number}.")
        return found

    def clean_corrected_answer(self) -> str | None:
        return self._sent("corrected_answer")

    def clean_comment(self) -> str | None:
        return self._sent("comment")

    def _sent(self, name: str) -> str | None:
        """The field's text, or None when the form did not send it (kept as stored)."""
        return str(self.cleaned_data.get(name) or "") if name in self.data else None

    def names_a_source(self) -> bool:
        """Whether the form came from a vote row (it named a source, readable or not)."""
        return bool(str(self.data.get("source") or "").strip())

    def problem(self) -> str:
        return " ".join(f"{name}: {' '.join(str(m) for m in messages)}" for name, messages in self.errors.items())
