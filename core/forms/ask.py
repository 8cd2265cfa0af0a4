"""The ask form (and a follow-up's box, which posts the same fields): the question, the
strategy and kappa, the question it follows, and the sources chosen in its "Sources"
section (every active source, only the ticked ones, all but the ticked ones, a saved group).

The form parses; the service (core.services.asking.start_question) decides what may be
asked (the text's length, the strategy, kappa's range, the follow-up, the sources' count)
and names the field of whatever it refuses, as this form does for what does not parse."""

from __future__ import annotations

from typing import Any

from django import forms

from core.services.pages.ask_form import DEFAULT_STRATEGY, AskValues
from core.services.source_selection import INCLUDE, MAX_CHOSEN, SourceChoice
from sources.models import Source

DEFAULT_KAPPA = 4
MODES = ("all", "include", "exclude")


class SourceIdsField(forms.Field):
    """Ticked sources (or a follow-up's hidden ids): whole numbers, at most MAX_CHOSEN."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[int]:
        values = [str(v) for v in (value or [])][:MAX_CHOSEN]
        bad = [v for v in values if not v.strip().isascii() or not v.strip().isdigit()]
        if bad:
            raise forms.ValidationError(f"Not a source: {', '.join(repr(b[:20]) for b in bad[:3])}.", code="invalid")
        return [int(v) for v in values]


def blank_values() -> AskValues:
    """What the ask form shows when nothing was sent."""
    return {
        "text": "",
        "strategy": DEFAULT_STRATEGY,
        "research_strategy": "",
        "kappa": DEFAULT_KAPPA,
        "follows": "",
        "sources_mode": "all",
        "sources": [],
        "source_group": "",
    }


class AskForm(forms.Form):
    text = forms.CharField(required=False, strip=False)
    strategy = forms.CharField(required=False)
    # A research baseline chosen under "advanced" wins over the product strategy select.
    research_strategy = forms.CharField(required=False)
    kappa = forms.IntegerField(required=False, error_messages={"invalid": "kappa must be a whole number."})
    follows = forms.IntegerField(
        required=False,
        min_value=1,
        error_messages={
            "invalid": "follows must be the id of an earlier question (a whole number).",
            "min_value": "follows must be the id of an earlier question (a whole number).",
        },
    )
    sources_mode = forms.ChoiceField(
        choices=[(m, m) for m in MODES],
        required=False,
        error_messages={"invalid_choice": "Choose every active source, only those ticked, or all but those ticked."},
    )
    sources = SourceIdsField(required=False)
    # A follow-up's hidden copy of a question asked (through the API) with "only these" and
    # "never these" at once: the ids never to ask, whatever the mode. Read only with a follow-up.
    also_exclude = SourceIdsField(required=False)
    source_group = forms.IntegerField(
        required=False, min_value=1, error_messages={"invalid": "Choose a group from the list."}
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["source_group"].error_messages["min_value"] = "Choose a group from the list."
        # Errors about the choice as a whole, under the service's (the API's) field names.
        self.choice_errors: dict[str, list[str]] = {}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["strategy"] = (data.get("research_strategy") or "").strip() or data.get("strategy") or DEFAULT_STRATEGY
        if "also_exclude" in self.errors:  # one message for the ids, wherever they came from
            self.add_error("sources", self.errors.pop("also_exclude"))
        mode = data.get("sources_mode") or "all"
        if mode == "include" and not data.get("sources") and data.get("source_group") is None:
            self.choice_errors[INCLUDE] = [
                "Tick at least one source to ask only those (or choose “every active source”)."
            ]
        return data

    def errors_by_field(self) -> dict[str, list[str]]:
        """Every error, by the name the page shows it under (the Sources section's errors
        under the API's names, as the service reports them)."""
        errors = {name: [str(m) for m in messages] for name, messages in self.errors.items()}
        return {**errors, **self.choice_errors}

    def is_follow_up(self) -> bool:
        """Whether the form came from a follow-up's box (even with an unreadable ``follows``)."""
        return bool(str(self.data.get("follows") or "").strip())

    def source_choice(self) -> SourceChoice:
        """The sources chosen (call after is_valid()). A source deleted since a follow-up's
        question was asked is dropped from its "never these" (excluding it changes nothing)."""
        data = self.cleaned_data
        mode = data.get("sources_mode") or "all"
        ticked: list[int] = data.get("sources") or []
        also_excluded: list[int] = []
        if data.get("follows") is not None and data.get("also_exclude"):
            also_excluded = list(Source.objects.filter(pk__in=data["also_exclude"]).values_list("pk", flat=True))
        return SourceChoice.of(
            include=ticked if mode == "include" else (),
            exclude=[*(ticked if mode == "exclude" else ()), *also_excluded],
            group=data.get("source_group"),
        )

    def values(self) -> AskValues:
        """What the form shows again: the values as sent (a refused one as typed)."""
        raw = self.data
        cleaned = getattr(self, "cleaned_data", {})
        research = str(raw.get("research_strategy") or "").strip()
        return {
            "text": str(raw.get("text") or ""),
            "strategy": research or str(raw.get("strategy") or "") or DEFAULT_STRATEGY,
            "research_strategy": research,
            "kappa": str(raw.get("kappa") or "").strip(),
            "follows": str(raw.get("follows") or "").strip()[:20],
            "sources_mode": cleaned.get("sources_mode") or "all",
            "sources": cleaned.get("sources") or [],
            "source_group": str(raw.get("source_group") or "").strip(),
        }
