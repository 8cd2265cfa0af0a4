"""POST /api/token/: exchange a username and password for the account's API token."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle

from core.api.parsers import LimitedJSONParser
from core.api.schema import ApiSchema
from core.api.serializers.auth import TokenRequestSerializer, TokenSerializer


class LoginThrottle(AnonRateThrottle):
    """Password guessing is throttled per client address (scope "anon"; nobody is signed in here)."""

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class ObtainToken(ObtainAuthToken):
    authentication_classes: list[Any] = []
    parser_classes = [LimitedJSONParser, FormParser]
    throttle_classes = [LoginThrottle]
    schema = ApiSchema()

    @extend_schema(
        summary="Obtain the API token of an account",
        request=TokenRequestSerializer,
        responses=TokenSerializer,
        auth=[],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().post(request, *args, **kwargs)
