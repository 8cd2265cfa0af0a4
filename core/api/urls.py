"""The REST API under /api/ (see docs/api.md)."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from core.api.views.auth import ObtainToken
from core.api.views.catalogue import DocumentViewSet, SourceViewSet
from core.api.views.claims import ClaimGroupView, ClaimResolutionViewSet, ClaimRunView, ClaimViewSet
from core.api.views.engine import ConflictsView, EstimationRunViewSet, JobViewSet, QuestionViewSet
from core.api.views.feedback import FeedbackViewSet
from core.api.views.queries import FactQueryViewSet, QuerySetViewSet
from core.api.views.source_groups import SourceGroupViewSet
from core.api.views.strategies import StrategiesView
from reliability_site.csp import csp_update

app_name = "api"


class IdRouter(DefaultRouter):
    """Every resource of the API is addressed by its integer id: the detail routes take ASCII
    digits only. (DRF's default pattern takes any text and the lookup then converts it with
    int(), which reads Unicode digits: /api/sources/%EF%BC%91/ was source 1.)"""

    def get_lookup_regex(self, viewset: object, lookup_prefix: str = "") -> str:
        return rf"(?P<{lookup_prefix}pk>[0-9]+)"


router = IdRouter()
router.register("sources", SourceViewSet, basename="source")
router.register("documents", DocumentViewSet, basename="document")
router.register("questions", QuestionViewSet, basename="question")
router.register("source-groups", SourceGroupViewSet, basename="source-group")
router.register("estimation-runs", EstimationRunViewSet, basename="estimation-run")
router.register("jobs", JobViewSet, basename="job")
router.register("query-sets", QuerySetViewSet, basename="query-set")
router.register("fact-queries", FactQueryViewSet, basename="fact-query")
router.register("claims", ClaimViewSet, basename="claim")
router.register("claim-resolutions", ClaimResolutionViewSet, basename="claim-resolution")
router.register("feedback", FeedbackViewSet, basename="feedback")

urlpatterns = [
    path("token/", ObtainToken.as_view(), name="token"),
    path("conflicts/", ConflictsView.as_view(), name="conflicts"),
    path("strategies/", StrategiesView.as_view(), name="strategies"),
    path("claim-groups/", ClaimGroupView.as_view(), name="claim-groups"),
    path("claim-runs/", ClaimRunView.as_view(), name="claim-runs"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The docs pages keep the site's script policy (Swagger UI's start-up script is served as
    # a file by the split view, not inlined) but carry inline <style>; Redoc also starts its
    # search worker from a blob: URL.
    path(
        "docs/",
        csp_update(style_src=["'unsafe-inline'"])(SpectacularSwaggerSplitView.as_view(url_name="api:schema")),
        name="docs",
    ),
    path(
        "redoc/",
        csp_update(style_src=["'unsafe-inline'"], worker_src=["'self'", "blob:"])(
            SpectacularRedocView.as_view(url_name="api:schema")
        ),
        name="redoc",
    ),
    path("", include(router.urls)),
]
