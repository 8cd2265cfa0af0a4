"""The test factories build valid rows, related rows included, and the shared accounts have their roles."""

from __future__ import annotations

import numpy as np
import pytest
from django.conf import settings
from django.contrib.auth import authenticate
from django.test import RequestFactory

from core.roles import is_analyst, is_curator
from tests import factories as f


@pytest.mark.parametrize(
    "factory",
    [
        f.UserFactory,
        f.GroupFactory,
        f.AnalystFactory,
        f.CuratorFactory,
        f.JobFactory,
        f.SourceFactory,
        f.DocumentFactory,
        f.ChunkFactory,
        f.QueryCollectionFactory,
        f.FactQueryFactory,
        f.EstimationRunFactory,
        f.RunResponseFactory,
        f.RunAnswerFactory,
        f.ReliabilityScoreFactory,
        f.QuestionFactory,
        f.VoteFactory,
        f.ClaimFactory,
        f.ClaimResolutionFactory,
    ],
    ids=lambda factory: factory.__name__,
)
def test_every_factory_saves_a_valid_row_twice_over(db, factory):
    first, second = factory(), factory()
    for row in (first, second):
        row.full_clean(exclude=["password", "embedding"])  # a hash, and a vector checked below
    assert first.pk != second.pk or factory is f.GroupFactory  # the group of a role is one row


def test_a_chunk_is_a_unit_vector_of_the_configured_dimension_in_its_documents_source(db):
    chunk = f.ChunkFactory(seed=3)
    chunk.refresh_from_db()
    vector = np.asarray(chunk.embedding)
    assert vector.shape == (settings.EMBEDDING_DIMENSION,)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert np.allclose(vector, f.unit_vector(3))
    assert chunk.source == chunk.document.source


def test_a_run_response_asks_a_query_of_its_runs_query_set(db):
    response = f.RunResponseFactory()
    assert response.query.query_set == response.run.query_set
    assert f.RunResponseFactory(run=f.EstimationRunFactory(query_set=None)).query.query_set is not None


def test_a_finished_run_has_its_sources(db):
    sources = f.SourceFactory.create_batch(2)
    run = f.EstimationRunFactory(succeeded=True, sources=sources)
    assert run.state == "succeeded" and run.finished_at is not None
    assert set(run.sources.all()) == set(sources)


def test_the_shared_accounts_have_one_role_each_and_the_factory_password(analyst, curator, nobody):
    assert is_analyst(analyst) and not is_curator(analyst)
    assert is_curator(curator)
    assert not is_analyst(nobody)
    # django-axes (the first authentication backend) needs the request it counts failures by.
    assert (
        authenticate(request=RequestFactory().post("/login/"), username=curator.username, password=f.PASSWORD)
        == curator
    )
    assert f.UserFactory(password="another one").check_password("another one")
