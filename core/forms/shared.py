"""Form fields shared by the admin, the API and the pages, and the admin's topic edit form."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.db import models
from django.forms.fields import InvalidJSONInput

from core.engine.jsondepth import json_depth_error


class BoundedJSONField(forms.JSONField):
    """Django's JSONField, refusing JSON nested deeper than JSON_MAX_DEPTH with a form error
    (json.loads would otherwise recurse into a RecursionError: a 500)."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and not self.disabled:
            too_deep = json_depth_error(value, settings.JSON_MAX_DEPTH)
            if too_deep is not None:
                raise forms.ValidationError(f"Not accepted: {too_deep.reason}.", code="invalid")
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        # Re-displaying the refused input parses it too: show it as the text it was.
        if isinstance(data, str) and not self.disabled and json_depth_error(data, settings.JSON_MAX_DEPTH):
            return InvalidJSONInput(data)
        return super().bound_data(data, initial)


# ModelAdmin.formfield_overrides: every JSON model field is edited through BoundedJSONField.
JSON_FORMFIELD_OVERRIDES: dict[Any, dict[str, Any]] = {models.JSONField: {"form_class": BoundedJSONField}}


class ReferenceAnswersField(forms.CharField):
    """A fact query's reference answers, edited one per line (stored as a JSON list of strings)."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 40})
    max_answers = 50
    max_chars = 500

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            "One accepted answer per line. A query with reference answers is gold-checked: estimation runs take its "
            "truth from them and weigh it more in each source's accuracy.",
        )
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]  # this field's Python value is a list, not CharField's str
        lines = [str(v) for v in value] if isinstance(value, list) else str(super().to_python(value) or "").splitlines()
        answers = list(dict.fromkeys(line.strip() for line in lines if line.strip()))
        if len(answers) > self.max_answers:
            raise forms.ValidationError(f"At most {self.max_answers} reference answers.")
        if any(len(a) > self.max_chars or "\x00" in a for a in answers):
            raise forms.ValidationError(f"Each reference answer is at most {self.max_chars} characters, without NUL.")
        return answers

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial or []) != self.to_python(data)


class TopicEditForm(forms.Form):
    """A curator's edit of a run's topics: rename one, or merge one into another."""

    ACTIONS = [("rename", "Rename a topic"), ("merge", "Merge a topic into another")]
    action = forms.ChoiceField(choices=ACTIONS)
    topic = forms.ChoiceField(choices=[], help_text="The topic renamed, or the one the other is merged into.")
    name = forms.CharField(max_length=80, required=False, help_text="The new name (rename).")
    other = forms.ChoiceField(choices=[("", "—")], required=False, help_text="The topic merged into the first (merge).")

    def __init__(self, *args: Any, topics: list[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        topic, other = self.fields["topic"], self.fields["other"]
        assert isinstance(topic, forms.ChoiceField) and isinstance(other, forms.ChoiceField)
        topic.choices = list(topics or [])
        other.choices = [("", "—"), *(topics or [])]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "rename" and not str(data.get("name") or "").strip():
            self.add_error("name", "Give the topic's new name.")
        if data.get("action") == "merge":
            if not data.get("other"):
                self.add_error("other", "Choose the topic to merge into the first.")
            elif data.get("other") == data.get("topic"):
                self.add_error("other", "A topic cannot be merged into itself.")
        return data
