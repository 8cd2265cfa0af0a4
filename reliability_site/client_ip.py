"""The client address that throttles and login lockouts count by.

X-Forwarded-For is written by whoever sends the request, so it is only believed as far as
TRUSTED_PROXY_COUNT reverse proxies in front of this server append to it: with 0 (the
default) the header is ignored and the TCP peer (REMOTE_ADDR) is the client; with N, the
N-th address from the right, the one the outermost trusted proxy saw. This is DRF's rule
for REST_FRAMEWORK["NUM_PROXIES"], which the settings set to the same count, so the API
throttles and django-axes (AXES_CLIENT_IP_CALLABLE) always agree on who the client is.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    remote_addr = request.META.get("REMOTE_ADDR", "") or ""
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies <= 0 or not forwarded:
        return remote_addr
    addresses = [address.strip() for address in forwarded.split(",")]
    return addresses[-min(proxies, len(addresses))] or remote_addr
