"""A source's reliability by topic (issue 39), in a real browser at desktop and phone widths:
one bar per topic with its interval, legible, and the page never scrolls sideways."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from sources.models import Source
from tests.browser.helpers import PHONE, assert_no_sideways_scroll, log_in, set_viewport
from tests.browser.test_phone_layout import DESKTOP, assert_legible_graphs, open_page
from tests.browser.world import build_world
from tests.factories import AnalystFactory, CuratorFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize(("size", "mobile"), [(DESKTOP, False), (PHONE, True)], ids=["desktop", "phone"])
def test_the_source_page_charts_reliability_by_topic(
    browser: Any, live_server: Any, db: Any, size: tuple[int, int], mobile: bool
) -> None:
    build_world(AnalystFactory(username="alice"), CuratorFactory(username="carol"))
    source = Source.objects.order_by("id").first()
    assert source is not None
    set_viewport(browser, size, mobile=mobile)
    log_in(browser, live_server.url, "alice")
    open_page(browser, f"{live_server.url}/sources/{source.pk}/")
    chart = browser.find_element(By.ID, "topic-chart")
    assert chart.is_displayed() and chart.size["width"] > 200
    bars = chart.find_elements(By.CSS_SELECTOR, "g > rect:nth-of-type(2)")
    assert len(bars) == 2
    # Reliable on the first topic, not the second: the first bar is the longer, and red marks the low one.
    assert bars[0].size["width"] > 3 * bars[1].size["width"]
    assert bars[1].get_attribute("fill") == "#c0392b"
    labels = chart.text
    assert "sport · results" in labels
    assert_legible_graphs(browser, f"source-detail at {size}")
    assert_no_sideways_scroll(browser, f"source-detail at {size}", size[0])
