"""What every API view shares: auth, roles, throttles, pagination, parsers, schema, filters."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, TypeVar, overload

from django.db.models import Model, QuerySet
from django.utils.dateparse import parse_date, parse_datetime
from rest_framework import exceptions, status
from rest_framework.pagination import BasePagination, PageNumberPagination
from rest_framework.parsers import BaseParser, FormParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.schemas.inspectors import ViewInspector
from rest_framework.serializers import BaseSerializer
from rest_framework.throttling import BaseThrottle

from core.api.parsers import LimitedJSONParser, LimitedMultiPartParser
from core.api.permissions import RolePermission
from core.api.schema import ApiSchema
from core.api.throttles import UserThrottle

if TYPE_CHECKING:
    from rest_framework.permissions import _PermissionClass  # a stub-only alias

T = TypeVar("T")
M = TypeVar("M", bound=Model)
MAX_ID = 2**63 - 1


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 200


class ApiViewMixin:
    permission_classes: Sequence[_PermissionClass] = [RolePermission]
    throttle_classes: Sequence[type[BaseThrottle]] = [UserThrottle]
    pagination_class: type[BasePagination] | None = Pagination
    parser_classes: Sequence[type[BaseParser]] = [LimitedJSONParser]
    schema: ViewInspector | None = ApiSchema()


UPLOAD_PARSERS = [LimitedJSONParser, LimitedMultiPartParser, FormParser]


def accepted(
    request: Request,
    job_id: int | None,
    serializer: type[BaseSerializer[object]],
    body: dict[str, object],
    context: dict[str, object] | None = None,
) -> Response:
    """202 for work started in the background: ``body`` with the job and its ``status_url``
    (the job to poll, also the Location header; None for work that has no job), through the
    view's response ``serializer`` class."""
    status_url = reverse("api:job-detail", args=[job_id], request=request) if job_id else None
    data = serializer({"job": job_id, "status_url": status_url, **body}, context=context or {}).data
    return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": status_url} if status_url else {})


def _parse_id(value: str) -> int:
    number = int(value)
    if not 0 < number <= MAX_ID:
        raise ValueError
    return number


def _parse_moment(value: str) -> dt.datetime:
    moment = parse_datetime(value)
    if moment is None:
        day = parse_date(value)
        if day is None:
            raise ValueError
        moment = dt.datetime(day.year, day.month, day.day)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC)
    # PostgreSQL accepts offsets up to 15:59 only, so UTC it is (near year 1: OverflowError, a 400).
    return moment.astimezone(dt.UTC)


def _parse_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError


# What a query-string filter parses to, by kind ("text" is the string itself).
QueryValue = int | dt.datetime | bool | str
PARSERS: dict[str, tuple[Callable[[str], QueryValue], str]] = {
    "id": (_parse_id, "Expected a positive integer id."),
    "moment": (_parse_moment, "Expected an ISO date or datetime."),
    "bool": (_parse_bool, "Expected true or false."),
    "text": (str, ""),
}


@overload
def query_param(request: Request, name: str, kind: Literal["id"]) -> int | None: ...
@overload
def query_param(request: Request, name: str, kind: Literal["moment"]) -> dt.datetime | None: ...
@overload
def query_param(request: Request, name: str, kind: Literal["bool"]) -> bool | None: ...
@overload
def query_param(request: Request, name: str, kind: Literal["text"]) -> str | None: ...
@overload
def query_param(request: Request, name: str, kind: str) -> QueryValue | None: ...
def query_param(request: Request, name: str, kind: str) -> QueryValue | None:
    """A filter from the query string, None when absent; a bad value is a 400 naming it."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    parse, message = PARSERS[kind]
    if "\x00" in raw:
        raise exceptions.ValidationError({name: ["Must not contain NUL characters."]})
    try:
        return parse(raw)
    except (ValueError, OverflowError):
        raise exceptions.ValidationError({name: [message]}) from None


def filter_by_query(request: Request, queryset: QuerySet[M], filters: dict[str, tuple[str, str]]) -> QuerySet[M]:
    """Apply `{lookup: (query parameter, kind)}` filters for each parameter present."""
    for lookup, (name, kind) in filters.items():
        value = query_param(request, name, kind)
        if value is not None:
            queryset = queryset.filter(**{lookup: value})
    return queryset
