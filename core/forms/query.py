"""The query strings of the dashboard's pages: one form per page that takes filters, a page
number, an order or the item shown. A value that does not parse (a page "abc", a date
"yesterday", an unknown edge mode) is refused with a 400 that names the parameter
(core.views.query.bad_query), never read as something else: a typo must not show another
page of results as if it were the one asked for. Parameters a form does not name are
ignored, as before (a link's anchor, ``?start=1`` on the run list)."""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms
from django.http import QueryDict

from core.engine.strategies import available_strategies

MAX_ID = 2**63 - 1  # a bigint primary key: a larger number names nothing (and overflows the query)
MAX_SEARCH_CHARS = 200
EDGE_MODES = ("auto", "all", "strong", "conflict", "agreement")
VIEW_MODES = ("answers", "claims")
SORTS = ("reliability", "name")


def page_field() -> forms.IntegerField:
    """A pager's ``page``: 1, 2, …; past the last page the pager shows the last one."""
    return forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_ID,
        error_messages={"invalid": "Enter a page number (1, 2, …)."},
    )


def id_field(what: str) -> forms.IntegerField:
    """An optional id in the query string (``?run=12``)."""
    message = f"Enter the number of a {what}."
    return forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_ID,
        error_messages={"invalid": message, "min_value": message, "max_value": message},
    )


def text_field(max_length: int = MAX_SEARCH_CHARS) -> forms.CharField:
    """A search box or a name to filter by (surrounding spaces dropped)."""
    return forms.CharField(required=False, max_length=max_length)


def choice_field(choices: tuple[str, ...]) -> forms.ChoiceField:
    listed = ", ".join(choices)
    return forms.ChoiceField(
        choices=[(c, c) for c in choices],
        required=False,
        error_messages={"invalid_choice": f"Choose one of {listed} (not %(value)s)."},
    )


class QueryForm(forms.Form):
    """A page's query string. ``problem()`` says what is wrong in one line, each message
    prefixed by its parameter's name (the 400 page shows it)."""

    def problem(self) -> str:
        return " ".join(f"{name}: {' '.join(str(m) for m in messages)}" for name, messages in self.errors.items())

    def pager_query(self) -> str:
        """The query string without ``page``: the pager's links add their own."""
        query = self.data.copy() if isinstance(self.data, QueryDict) else QueryDict(mutable=True)
        query.pop("page", None)
        return query.urlencode()

    def text(self, name: str) -> str:
        return str(self.cleaned_data.get(name) or "")


class PageForm(QueryForm):
    """A page whose only input is its pager."""

    page = page_field()


class HistoryForm(QueryForm):
    """The history page's filters: strategy, words of the question or its answer, a date range."""

    strategy = forms.ChoiceField(required=False)
    q = text_field()
    page = page_field()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        strategy = self.fields["strategy"]
        assert isinstance(strategy, forms.ChoiceField)
        strategy.choices = [("", "Any strategy"), *((name, name) for name in available_strategies())]
        # "from" is a Python keyword: the date fields are added by name.
        self.fields["from"] = forms.DateField(required=False, input_formats=["%Y-%m-%d"])
        self.fields["to"] = forms.DateField(required=False, input_formats=["%Y-%m-%d"])
        for name in ("from", "to"):
            self.fields[name].error_messages["invalid"] = "Enter a date as YYYY-MM-DD."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("from"), data.get("to")
        if isinstance(start, date) and isinstance(end, date) and end < start:
            self.add_error("to", "The end date is before the start date.")
        return data


class DocumentForm(QueryForm):
    """A document's page: ``chunk`` is the passage to highlight (a citation's target)."""

    chunk = id_field("passage")


class DocumentSearchForm(QueryForm):
    """A source's documents: full-text search and the pager."""

    q = text_field()
    page = page_field()


class ClaimBrowserForm(QueryForm):
    """The claims browser: words of the subject or value, an attribute, a source, the pager."""

    q = text_field()
    attribute = text_field()
    source = id_field("source")
    page = page_field()


class ClaimItemForm(QueryForm):
    """A subject's page or an item's conflict view, optionally as a given claims run resolved it."""

    subject = text_field(1000)
    attribute = text_field(1000)
    run = id_field("claims run")


class ConflictsForm(QueryForm):
    """The conflicts page: answers or claims, the run, which edges to draw, the contested items' pager."""

    mode = choice_field(VIEW_MODES)
    run = id_field("run")
    edges = choice_field(EDGE_MODES)
    page = page_field()

    def choice(self, name: str, default: str) -> str:
        return self.text(name) or default


class RunListForm(QueryForm):
    """The run list: its pager, and ``query_set`` (the start form opened on that query set: the
    admin links here after a curator confirms feedback)."""

    page = page_field()
    query_set = id_field("query set")


class SourceListForm(QueryForm):
    """The sources list's order and topic (a topic of the latest run: the list then shows and
    orders by each source's reliability on it)."""

    sort = forms.ChoiceField(choices=[("reliability", "Most reliable first"), ("name", "By name")], required=False)
    topic = forms.ChoiceField(choices=[("", "All topics")], required=False)

    def __init__(self, *args: Any, topics: list[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["topic"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "All topics"), *(topics or [])]
        field.error_messages["invalid_choice"] = "Choose a topic of the latest run (not %(value)s)."
