"""factory-boy factories for the models tests touch most."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from sources.models import Document, Source, content_hash


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.PostGenerationMethodCall("set_password", "correct horse battery staple")


class SourceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Source
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"source-{n}")
    kind = Source.Kind.NEWS


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Document

    source = factory.SubFactory(SourceFactory)
    title = factory.Sequence(lambda n: f"Document {n}")
    text = factory.Sequence(lambda n: f"This is document number {n}. It says something.")
    content_hash = factory.LazyAttribute(lambda d: content_hash(d.text))
