from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponseBase
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path

from core.views.account import ConfirmedLogoutView

PRODUCT = "Reliability-aware RAG"

# The admin says whose it is: "Reliability-aware RAG administration", not "Django administration".
admin.site.site_header = f"{PRODUCT} administration"
admin.site.site_title = f"{PRODUCT} admin"
admin.site.index_title = "Sources, documents, runs and questions"

# The product's server-error page, with the nav when a request context can be built (core/views/errors.py).
handler500 = "core.views.errors.server_error"


def favicon(request: HttpRequest) -> HttpResponseBase:
    """Browsers and tools ask for /favicon.ico whatever a page links (the admin's pages link none)."""
    return redirect(static("favicon.svg"), permanent=True)


urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("logout/", ConfirmedLogoutView.as_view(), name="logout"),
    path("favicon.ico", favicon),
    path("jobs/", include("tasks.urls")),
    path("api/", include("core.api.urls")),
    path("", include("core.urls")),
]
