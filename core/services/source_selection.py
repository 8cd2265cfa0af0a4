"""Which sources a question may read: every active source (the default), only some, every
one but some, or a saved group (core.models.SourceGroup).

resolve_sources() checks a choice when the question is asked and turns it into the record
stored on Question.source_selection; the worker reads the allowed ids back from it, and the
question page and its permalink show what was included and excluded (describe_selection).
A private group's name and sources are shown only to those who may see the group, and to
the asker (selection_seen_by): the page, its permalink and the API.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypedDict

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from core.engine.json_values import as_int, as_list, as_object
from core.engine.strategies import Requirement, available_strategies, strategy_class
from core.engine.types import JSONObject, JSONValue
from core.models import SourceGroup
from runtime.users import Viewer
from sources.models import Claim, Source

# The names of the fields a choice comes in (the API's and the service's; the form maps onto them).
INCLUDE = "include_sources"
EXCLUDE = "exclude_sources"
GROUP = "source_group"
MAX_CHOSEN = 1000  # ids in one list: more is a mistake, not a choice


@dataclass(frozen=True)
class SourceChoice:
    """What the asker chose: ``include`` (only these, plus the group's), ``exclude`` (never
    these), ``group`` (a SourceGroup id). Empty: every active source."""

    include: tuple[int, ...] = ()
    exclude: tuple[int, ...] = ()
    group: int | None = None

    @classmethod
    def of(
        cls, include: Iterable[int] | None = None, exclude: Iterable[int] | None = None, group: int | None = None
    ) -> SourceChoice:
        return cls(tuple(dict.fromkeys(include or ())), tuple(dict.fromkeys(exclude or ())), group)

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude or self.group is not None)

    @property
    def field(self) -> str:
        """The field to name when the choice as a whole leaves too few sources."""
        if self.exclude:
            return EXCLUDE
        return INCLUDE if self.include else GROUP


def visible_groups(user: Viewer | None) -> QuerySet[SourceGroup]:
    """The groups a user may ask: the shared ones and their own."""
    visible = Q(shared=True)
    if getattr(user, "is_authenticated", False):
        visible |= Q(owner=user)
    return SourceGroup.objects.filter(visible)


def _listed(names: Sequence[str]) -> str:
    quoted = [f"“{n}”" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _ids(ids: Sequence[int]) -> str:
    return ("id " if len(ids) == 1 else "ids ") + ", ".join(str(i) for i in ids)


def _check_ids(choice: SourceChoice, known: dict[int, Source], errors: dict[str, str]) -> None:
    for field, given in ((INCLUDE, choice.include), (EXCLUDE, choice.exclude)):
        if len(given) > MAX_CHOSEN:
            errors[field] = f"At most {MAX_CHOSEN} sources can be listed."
            continue
        unknown = [i for i in given if i not in known]
        if unknown:
            errors[field] = f"No source has the {_ids(unknown)}."
    inactive = [known[i].name for i in choice.include if i in known and not known[i].active]
    if inactive and INCLUDE not in errors:
        verb = "is" if len(inactive) == 1 else "are"
        errors[INCLUDE] = f"{_listed(inactive)} {verb} inactive: an inactive source is never asked."
    both = [known[i].name for i in choice.include if i in known and i in set(choice.exclude)]
    if both and EXCLUDE not in errors:
        errors[EXCLUDE] = f"{_listed(both)} cannot be both included and excluded."


def _readable(allowed: list[int], claims: bool) -> int:
    """How many of the allowed sources a strategy can read: those holding documents (chunks),
    or for a claim strategy those holding claims."""
    if claims:
        return Claim.objects.filter(source_id__in=allowed).values("source_id").distinct().count()
    return Source.objects.filter(pk__in=allowed, chunk_count__gt=0).count()


def resolve_sources(choice: SourceChoice | None, strategy: str, user: Viewer | None = None) -> JSONObject:
    """The record of the sources a question may read ({} for every active source), checked:
    unknown or inactive ids, an unknown group or another analyst's, a source both included
    and excluded, a strategy that reads no sources, a choice that leaves no active source or
    fewer than the strategy's minimum (AnswerStrategy.min_sources) that it can read.
    Raises ValidationError naming each offending field."""
    if not choice:
        return {}
    errors: dict[str, str] = {}
    known = {s.pk: s for s in Source.objects.filter(pk__in={*choice.include, *choice.exclude})}
    _check_ids(choice, known, errors)
    group = None
    if choice.group is not None:
        group = visible_groups(user).filter(pk=choice.group).first()
        if group is None:
            errors[GROUP] = f"No source group with the id {choice.group} is open to you."
    cls = strategy_class(strategy) if strategy in available_strategies() else None
    if cls is not None and not cls.uses_sources:
        errors.setdefault(
            choice.field, f"{strategy} answers without reading the sources: a choice of sources does not apply to it."
        )
    if errors:
        raise ValidationError(errors)

    active = Source.objects.filter(active=True)
    if choice.include or group is not None:
        base = set(choice.include)
        if group is not None:
            base |= set(group.sources.values_list("pk", flat=True))
        active = active.filter(pk__in=base)
    allowed = list(active.exclude(pk__in=choice.exclude).order_by("name").values("id", "name"))
    if not allowed:
        if group is not None and not choice.include and not choice.exclude:
            message = f"The group “{group.name}” holds no active source."
        else:
            message = "This choice leaves no active source to ask."
        raise ValidationError({choice.field: message})
    if cls is not None:
        claims = Requirement.CLAIMS in cls.requires
        readable = _readable([s["id"] for s in allowed], claims)
        if readable < cls.min_sources:
            what = "claims" if claims else "documents"
            have = "none of the chosen sources does" if readable == 0 else f"only {readable} of the chosen do"
            need = "1 source" if cls.min_sources == 1 else f"{cls.min_sources} sources"
            raise ValidationError({choice.field: f"{strategy} needs at least {need} holding {what}; {have}."})

    def named(ids: Iterable[int]) -> list[JSONValue]:
        return [{"id": i, "name": known[i].name} for i in ids if i in known]

    return {
        "include": named(choice.include),
        "exclude": named(choice.exclude),
        "group": {"id": group.pk, "name": group.name} if group is not None else None,
        "allowed": [{"id": s["id"], "name": s["name"]} for s in allowed],
    }


def _named(record: JSONObject, key: str, field: str) -> list[JSONValue]:
    """``field`` ("id" or "name") of each source a stored selection lists under ``key``."""
    return [s[field] for s in as_list(record.get(key)) if isinstance(s, dict) and field in s]


def allowed_ids(record: JSONObject | None) -> list[int] | None:
    """The source ids a stored selection allows (None: every active source)."""
    if not record:
        return None
    return [as_int(i, "allowed source id") for i in _named(record, "allowed", "id")]


def selection_seen_by(
    record: JSONObject | None,
    user: Viewer | None,
    *,
    asked_by_id: int | None = None,
    visible_group_ids: set[int] | None = None,
) -> JSONObject:
    """A stored selection as ``user`` may see it. A group they cannot see (another analyst's
    private group: visible_groups' rule, applied now) keeps its name and its sources hidden:
    "group" becomes None, "private_group" True, and "allowed" (the group's sources with those
    included) is left out; the sources the asker named themselves stay. The asker
    (``asked_by_id``) sees their own choice. ``visible_group_ids``: the ids visible_groups(user)
    holds, when the caller already has them (a list of questions)."""
    record = record or {}
    group = as_object(record.get("group"))
    if not group or (asked_by_id is not None and asked_by_id == getattr(user, "pk", None)):
        return record
    if visible_group_ids is None:
        gid = group.get("id")
        visible = isinstance(gid, int) and visible_groups(user).filter(pk=gid).exists()
    else:
        visible = group.get("id") in visible_group_ids
    if visible:
        return record
    hidden = {key: value for key, value in record.items() if key != "allowed"}
    return {**hidden, "group": None, "private_group": True}


class SelectionView(TypedDict):
    """What a question page says about its choice of sources."""

    summary: str
    group: JSONObject | None
    private_group: bool
    included: list[str]
    excluded: list[str]
    allowed: list[str]


def describe_selection(record: JSONObject | None) -> SelectionView | None:
    """What a question page says about a stored selection (None: every active source); a
    private group's name and sources hidden by selection_seen_by stay hidden."""
    if not record:
        return None
    group = as_object(record.get("group")) or None
    private = bool(record.get("private_group"))
    included = [str(name) for name in _named(record, "include", "name")]
    excluded = [str(name) for name in _named(record, "exclude", "name")]
    allowed = [str(name) for name in _named(record, "allowed", "name")]
    if group or private:
        summary = f"the sources of the group “{group['name']}”" if group else "the sources of a private group"
        if included:
            summary += f" and {_listed(included)}"
    elif included:
        summary = "only the sources chosen"
    else:
        summary = "every active source but those excluded"
    return {
        "summary": summary,
        "group": group,
        "private_group": private,
        "included": included,
        "excluded": excluded,
        "allowed": allowed,
    }
