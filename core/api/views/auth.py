"""POST /api/token/: exchange a username and password for the account's API token."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.authentication import BaseAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle

from core.api.parsers import LimitedJSONParser
from core.api.schema import ApiSchema
from core.api.serializers.auth import TokenRequestSerializer, TokenSerializer
from core.lockout import LOCKED_OUT_CODE, cooloff_seconds, lockout_message


class LockedOut(exceptions.APIException):
    """django-axes refused the login: too many failures for this account or address."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = LOCKED_OUT_CODE

    def __init__(self) -> None:
        super().__init__(lockout_message())
        self.wait = cooloff_seconds()  # the exception handler sends it as Retry-After


class LoginThrottle(AnonRateThrottle):
    """Password guessing is throttled per client address (scope "anon"; nobody is signed in here)."""

    def get_rate(self) -> str | None:
        # The stubs type the rates as numbers; DRF's are "N/period" strings.
        return cast("dict[str | None, str | None]", api_settings.DEFAULT_THROTTLE_RATES).get(self.scope)


class ObtainToken(ObtainAuthToken):
    authentication_classes: Sequence[type[BaseAuthentication]] = []
    parser_classes = [LimitedJSONParser, FormParser]
    throttle_classes = [LoginThrottle]
    schema = ApiSchema()

    @extend_schema(
        summary="Obtain the API token of an account",
        description=(
            "Throttled per client address. After too many failed logins for an account, or from an "
            "address, logins are refused for a while (429, code `locked_out`, with Retry-After)."
        ),
        request=TokenRequestSerializer,
        responses=TokenSerializer,
        auth=[],
    )
    def post(self, request: Request, *args: object, **kwargs: object) -> Response:
        credentials = TokenRequestSerializer(data=request.data)
        credentials.is_valid(raise_exception=True)
        # django-axes counts failures and refuses locked-out clients inside authenticate().
        # It reads and flags the Django request, the one its middleware sees, not DRF's wrapper.
        django_request = request._request
        user = authenticate(
            request=django_request,
            username=credentials.validated_data["username"],
            password=credentials.validated_data["password"],
        )
        if getattr(django_request, "axes_locked_out", False):
            raise LockedOut()
        if user is None:
            raise exceptions.ValidationError("Unable to log in with provided credentials.", code="authorization")
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})
