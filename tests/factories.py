"""factory-boy factories, one per model, with sensible defaults.

Related rows come along by SubFactory (``RunResponseFactory()`` brings its run, query and
source), unique fields come from sequences. Accounts get the password ``PASSWORD`` and their
roles with ``UserFactory(roles=[ANALYST])``, or from ``AnalystFactory`` / ``CuratorFactory``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

import factory
import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.db import models
from django.utils import timezone

from core.models import (
    ClaimResolution,
    EstimationRun,
    FactQuery,
    QueryCollection,
    Question,
    ReliabilityScore,
    RunAnswer,
    RunResponse,
    SourceDependence,
    Vote,
)
from core.roles import ANALYST, CURATOR
from sources.models import Chunk, Claim, Document, Source, content_hash
from tasks.models import Job

PASSWORD = "correct horse battery staple"


def unit_vector(seed: int, dimension: int | None = None) -> np.ndarray:
    """A deterministic unit vector (float32) of the configured embedding dimension."""
    dimension = dimension or settings.EMBEDDING_DIMENSION
    vector = np.random.default_rng(seed).standard_normal(dimension)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


M = TypeVar("M", bound=models.Model)


class ModelFactory(factory.django.DjangoModelFactory[M], Generic[M]):
    """A model factory whose call returns its model (``SourceFactory()`` is a Source to mypy:
    factory_boy's metaclass ``__call__`` is untyped, so without this a factory's call would
    look like an instance of the factory)."""

    class Meta:
        abstract = True

    if TYPE_CHECKING:

        def __new__(cls, *args: Any, **kwargs: Any) -> M: ...  # type: ignore[misc]  # the model, not the factory


# --- Accounts and roles ---------------------------------------------------------------


class GroupFactory(ModelFactory[Group]):
    """A role: a Django group (the analyst and curator groups come from a migration and are reused)."""

    class Meta:
        model = Group
        django_get_or_create = ("name",)

    name = ANALYST


def add_roles(user: User, roles: list[str] | tuple[str, ...]) -> User:
    """Put an account in the groups named (core.roles.ANALYST, CURATOR)."""
    if roles:
        user.groups.add(*(GroupFactory(name=role) for role in roles))
    return user


# Post-generation hooks: factory_boy calls them with the account built (not the factory).


def _set_password(user: User, create: bool, extracted: str | None, **kwargs: Any) -> None:
    user.set_password(extracted or PASSWORD)
    if create:
        user.save(update_fields=["password"])


def _add_given_roles(user: User, create: bool, extracted: list[str] | None, **kwargs: Any) -> None:
    if create:
        add_roles(user, extracted or [])


def _add_analyst_roles(user: User, create: bool, extracted: list[str] | None, **kwargs: Any) -> None:
    if create:
        add_roles(user, [ANALYST] if extracted is None else extracted)


def _add_curator_roles(user: User, create: bool, extracted: list[str] | None, **kwargs: Any) -> None:
    if create:
        add_roles(user, [CURATOR] if extracted is None else extracted)


class UserFactory(ModelFactory[User]):
    """An account with ``PASSWORD`` (or ``password=...``) and the groups in ``roles=[...]``."""

    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")

    password = factory.PostGeneration(_set_password)
    roles = factory.PostGeneration(_add_given_roles)


class AnalystFactory(UserFactory):
    username = factory.Sequence(lambda n: f"analyst{n}")

    roles = factory.PostGeneration(_add_analyst_roles)


class CuratorFactory(UserFactory):
    username = factory.Sequence(lambda n: f"curator{n}")

    roles = factory.PostGeneration(_add_curator_roles)


# --- Jobs -----------------------------------------------------------------------------


class JobFactory(ModelFactory[Job]):
    class Meta:
        model = Job

    kind = Job.Kind.OTHER
    state = Job.State.PENDING


# --- Sources, documents, chunks -------------------------------------------------------


class SourceFactory(ModelFactory[Source]):
    class Meta:
        model = Source
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"source-{n}")
    kind = Source.Kind.NEWS


class DocumentFactory(ModelFactory[Document]):
    class Meta:
        model = Document

    source = factory.SubFactory(SourceFactory)
    title = factory.Sequence(lambda n: f"Document {n}")
    text = factory.Sequence(lambda n: f"This is document number {n}. It says something.")
    content_hash = factory.LazyAttribute(lambda d: content_hash(d.text))


class ChunkFactory(ModelFactory[Chunk]):
    """A chunk of its document's source, embedded as a deterministic unit vector (``seed``)."""

    class Meta:
        model = Chunk

    class Params:
        seed = factory.Sequence(lambda n: n)

    document = factory.SubFactory(DocumentFactory)
    source = factory.SelfAttribute("document.source")
    ordinal = factory.Sequence(lambda n: n)
    text = factory.LazyAttribute(lambda c: f"Chunk {c.ordinal} of {c.document.title}")
    embedding = factory.LazyAttribute(lambda c: unit_vector(c.seed))


# --- Fact-checking queries and estimation runs ----------------------------------------


class QueryCollectionFactory(ModelFactory[QueryCollection]):
    class Meta:
        model = QueryCollection
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"query-set-{n}")


class FactQueryFactory(ModelFactory[FactQuery]):
    class Meta:
        model = FactQuery

    query_set = factory.SubFactory(QueryCollectionFactory)
    question = factory.Sequence(lambda n: f"Question {n}?")


def _set_run_sources(run: EstimationRun, create: bool, extracted: list[Source] | None, **kwargs: Any) -> None:
    if create and extracted:
        run.sources.set(extracted)


class EstimationRunFactory(ModelFactory[EstimationRun]):
    """A pending run; ``succeeded=True`` for a finished one, ``sources=[...]`` for its sources."""

    class Meta:
        model = EstimationRun
        skip_postgeneration_save = True

    class Params:
        succeeded = factory.Trait(
            state=EstimationRun.State.SUCCEEDED,
            converged=True,
            iterations=3,
            finished_at=factory.LazyFunction(timezone.now),
        )

    query_set = factory.SubFactory(QueryCollectionFactory)
    state = EstimationRun.State.PENDING

    sources = factory.PostGeneration(_set_run_sources)


def _query_of_the_run(query: Any) -> QueryCollection:
    """The run's own query set, so that a response's query belongs to the run."""
    return query.factory_parent.run.query_set or QueryCollectionFactory()


class RunResponseFactory(ModelFactory[RunResponse]):
    class Meta:
        model = RunResponse

    run = factory.SubFactory(EstimationRunFactory)
    query = factory.SubFactory(FactQueryFactory, query_set=factory.LazyAttribute(_query_of_the_run))
    source = factory.SubFactory(SourceFactory)
    response = "Paris"
    raw_response = factory.SelfAttribute("response")
    align_score = 0.9
    cluster = 0
    agrees = True  # with the run's answer; None for an IDK


class RunAnswerFactory(ModelFactory[RunAnswer]):
    class Meta:
        model = RunAnswer

    run = factory.SubFactory(EstimationRunFactory)
    query = factory.SubFactory(FactQueryFactory, query_set=factory.LazyAttribute(_query_of_the_run))
    answer = "Paris"
    cluster = 0
    support = 1.0


class ReliabilityScoreFactory(ModelFactory[ReliabilityScore]):
    """Reliability 0.7 with an interval of +-0.1 (clipped to [0, 1]) and the weight equal to it."""

    class Meta:
        model = ReliabilityScore

    run = factory.SubFactory(EstimationRunFactory, succeeded=True)
    source = factory.SubFactory(SourceFactory)
    reliability = 0.7
    weight = factory.SelfAttribute("reliability")
    low = factory.LazyAttribute(lambda s: max(0.0, s.reliability - 0.1))
    high = factory.LazyAttribute(lambda s: min(1.0, s.reliability + 0.1))
    answers = 10
    agreements = 8


class SourceDependenceFactory(ModelFactory[SourceDependence]):
    """Two sources of a finished run found dependent (probability 0.9) on 8 shared answers, 6 of them false."""

    class Meta:
        model = SourceDependence

    run = factory.SubFactory(EstimationRunFactory, succeeded=True)
    source_a = factory.SubFactory(SourceFactory)
    source_b = factory.SubFactory(SourceFactory)
    probability = 0.9
    shared = 8
    same_true = 2.0
    same_false = 6.0
    different = 0
    examples = factory.LazyFunction(list)


# --- Claims and their resolutions ----------------------------------------------------


class ClaimFactory(ModelFactory[Claim]):
    """One source's value for one (subject, attribute), read through a mapping; ``value`` is
    the normalised value (``raw_value`` defaults to it)."""

    class Meta:
        model = Claim

    source = factory.SubFactory(SourceFactory)
    subject = factory.Sequence(lambda n: f"subject-{n}")
    attribute = "attribute"
    value = "value"
    raw_value = factory.SelfAttribute("value")
    normalizer = "text"
    method = Claim.Method.MAPPING
    provenance = factory.LazyFunction(dict)


class ClaimResolutionFactory(ModelFactory[ClaimResolution]):
    """A succeeded claim-level run's verdict on one item: ``value`` with confidence 0.9,
    claimed by nobody unless ``values=[...]`` says who."""

    class Meta:
        model = ClaimResolution

    run = factory.SubFactory(EstimationRunFactory, succeeded=True, kind=EstimationRun.Kind.CLAIMS, query_set=None)
    subject = factory.Sequence(lambda n: f"subject-{n}")
    attribute = "attribute"
    value = "value"
    confidence = 0.9
    claims = factory.LazyAttribute(lambda r: sum(len(v.get("sources", [])) for v in r.values))
    conflicting = factory.LazyAttribute(lambda r: len(r.values) > 1)
    values = factory.LazyFunction(list)


# --- Questions and votes --------------------------------------------------------------


class QuestionFactory(ModelFactory[Question]):
    """An unanswered question; ``answered=True`` for one answered "Paris" by the extractive reader."""

    class Meta:
        model = Question

    class Params:
        answered = factory.Trait(
            answer="Paris",
            confidence=0.75,
            backend="extractive",
            answered_at=factory.LazyFunction(timezone.now),
        )

    text = factory.Sequence(lambda n: f"Question {n}?")
    strategy = "ra-rag"


class VoteFactory(ModelFactory[Vote]):
    class Meta:
        model = Vote

    question = factory.SubFactory(QuestionFactory)
    source = factory.SubFactory(SourceFactory)
    rank = 0
    response = "Paris"
    raw_response = factory.SelfAttribute("response")
    cluster = 0
    weight = 1.0
    align_score = 0.9
