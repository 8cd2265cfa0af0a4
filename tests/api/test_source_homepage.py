"""A source's homepage is an http(s) URL that is a valid URI as written: what the schema
promises on read is checked on write."""

from __future__ import annotations

from sources.models import Source
from tests.factories import SourceFactory
from tests.helpers import error_of

BAD = [
    'https://ok.example/"><script>alert(1)</script>',
    "https://ok.example/<b>",
    "https://ok.example/a b",
    "https://ok.example/`x`",
    "javascript:alert(1)",
    "ftp://files.example/",
    "//ok.example/",
]
GOOD = ["https://wire.example/", "http://wire.example/news?page=2#top", ""]


def test_only_plain_http_and_https_homepages_are_accepted_on_create(as_curator):
    for homepage in BAD:
        response = as_curator.post("/api/sources/", {"name": "wire", "homepage": homepage}, format="json")
        assert response.status_code == 400, homepage
        assert set(error_of(response)["fields"]) == {"homepage"}, homepage
    assert not Source.objects.filter(name="wire").exists()
    for index, homepage in enumerate(GOOD):
        response = as_curator.post("/api/sources/", {"name": f"wire-{index}", "homepage": homepage}, format="json")
        assert response.status_code == 201, response.content
        assert response.json()["homepage"] == homepage


def test_a_bad_homepage_is_refused_on_change_and_the_old_one_kept(as_curator):
    source = SourceFactory(name="wire", homepage="https://wire.example/")
    response = as_curator.patch(
        f"/api/sources/{source.pk}/", {"homepage": 'https://ok.example/"><script>'}, format="json"
    )
    assert response.status_code == 400
    source.refresh_from_db()
    assert source.homepage == "https://wire.example/"
