"""What the ask form offers: the strategies the configured backends can run (product ones
first, research baselines under "advanced"), the sources and groups its Sources section
lists, and the asker's recent questions."""

from __future__ import annotations

from typing import TypedDict

from django.db.models import Count, F, QuerySet

from core.engine.params import describe
from core.engine.strategies import Requirement, runnable_strategies, strategy_class
from core.models import Question, SourceGroup
from core.services.engine_context import configured_offers
from core.services.source_selection import EXCLUDE, GROUP, INCLUDE, visible_groups
from runtime.users import Actor
from sources.models import Source

RECENT_QUESTIONS = 8
DEFAULT_STRATEGY = "ra-rag"
# The fields whose errors the Sources section shows (the service names the API's fields).
SOURCE_ERROR_FIELDS = (INCLUDE, EXCLUDE, GROUP, "sources", "sources_mode")


class AskValues(TypedDict):
    """What the ask form shows in its fields (as sent, a refused value as typed)."""

    text: str
    strategy: str
    research_strategy: str
    kappa: int | str
    follows: str
    sources_mode: str
    sources: list[int]
    source_group: str


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


class StrategyOffer(TypedDict):
    name: str
    description: str
    plain: str  # what it does, in plain words
    kappa: bool  # whether it takes kappa (the form shows the field only then)


class SourcePicker(TypedDict):
    ask_sources: list[Source]
    source_groups: list[SourceGroup]
    source_errors: list[str]
    sources_open: bool


def strategy_groups(
    offers: frozenset[Requirement] | None = None,
) -> tuple[list[StrategyOffer], list[StrategyOffer]]:
    """(product, research): the strategies the configured backends can run, split by their
    ``product`` flag (core.engine.strategies.base.AnswerStrategy), ra-rag first, each with its
    one-line description and whether it takes kappa. Oracle strategies are never runnable here."""
    names = runnable_strategies(configured_offers() if offers is None else offers)
    product: list[StrategyOffer] = []
    research: list[StrategyOffer] = []
    for name in sorted(names, key=lambda n: (n != DEFAULT_STRATEGY, n)):
        cls = strategy_class(name)
        entry: StrategyOffer = {
            "name": name,
            "description": cls.description,
            "plain": PLAIN_WORDS.get(name, cls.description),
            "kappa": "kappa" in {f["name"] for f in describe(cls.Params)},
        }
        (product if cls.product else research).append(entry)
    return product, research


def source_picker(user: Actor, values: AskValues, errors: dict[str, list[str]]) -> SourcePicker:
    """What the Sources section offers: the active sources, most reliable first, the groups
    open to the user, and whether the section starts open (a choice made, or an error in it)."""
    sources = list(
        Source.objects.filter(active=True)
        .order_by(F("reliability").desc(nulls_last=True), "name")
        .only("id", "name", "reliability", "chunk_count")
    )
    # Each group with its "size" (its sources), for the select.
    groups: list[SourceGroup] = list(visible_groups(user).annotate(size=Count("sources")).order_by("name", "id"))
    source_errors = [m for field in SOURCE_ERROR_FIELDS for m in errors.get(field, [])]
    chosen = values["sources_mode"] != "all" or bool(values["source_group"])
    return {
        "ask_sources": sources,
        "source_groups": groups,
        "source_errors": source_errors,
        "sources_open": chosen or bool(source_errors),
    }


def recent_questions(user: Actor) -> QuerySet[Question]:
    """The user's latest questions, newest first (the ask page's side list)."""
    if not user.is_authenticated:
        return Question.objects.none()
    return Question.objects.filter(asked_by_id=user.pk).only("id", "text", "answer", "created_at")[:RECENT_QUESTIONS]
