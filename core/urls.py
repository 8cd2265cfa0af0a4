from django.urls import path

from core.views import ask

urlpatterns = [
    path("", ask.ask, name="ask"),
]
