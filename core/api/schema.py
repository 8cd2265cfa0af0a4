"""OpenAPI generation: every operation documents the error responses it can give."""

from __future__ import annotations

from typing import Literal

from drf_spectacular.openapi import AutoSchema

from core.api.serializers.common import ErrorSerializer

ERROR_RESPONSES = {
    "400": "Invalid input; `fields` names each field at fault.",
    "401": "No credentials, or an invalid token.",
    "403": "The account lacks the role this needs.",
    "404": "No such object.",
    "413": "The request body is over the size limit.",
    "415": "Unsupported content type.",
    "429": "Throttled; retry after the Retry-After seconds.",
}


class ApiSchema(AutoSchema):
    def _get_response_bodies(self, direction: Literal["request", "response"] = "response") -> dict[str, object]:
        responses = super()._get_response_bodies(direction)
        codes = set(ERROR_RESPONSES)
        if self.method in ("GET", "HEAD", "OPTIONS", "DELETE"):
            codes -= {"413", "415"}
        for code in sorted(codes):
            if code not in responses:
                # drf-spectacular's own helper, unannotated.
                response = self._get_response_for_code(  # type: ignore[no-untyped-call]
                    ErrorSerializer, code, direction=direction
                )
                response["description"] = ERROR_RESPONSES[code]
                responses[code] = response
        return responses
