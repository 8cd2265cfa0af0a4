"""Logging out: a POST (the nav's button), confirmed on the login page; a GET of /logout/ (a
typed or bookmarked address) asks first, since logging out on a plain link would let any page
sign a person out."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.views import LogoutView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render


class ConfirmedLogoutView(LogoutView):
    """Django's LogoutView (POST only), plus a confirmation page on GET and a message after."""

    http_method_names = ["get", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect("login")
        return render(request, "registration/logout_confirm.html")

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        was_signed_in = request.user.is_authenticated
        response = super().post(request, *args, **kwargs)
        if was_signed_in:
            # Stored in the message cookie: the session it would otherwise use has just been flushed.
            messages.success(request, "You have been logged out.")
        return response
