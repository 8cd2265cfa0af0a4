"""A bloc that is the larger side on one topic only (issue 39), in a real browser at desktop
and phone widths: the run page names the topic and both groups, the checks page marks the
checks that settle it, a curator's one click records one, and neither page scrolls sideways."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from core.models import FactQuery
from tests.browser.helpers import PHONE, assert_no_sideways_scroll, log_in, set_viewport
from tests.browser.test_phone_layout import DESKTOP, open_page
from tests.factories import CuratorFactory
from tests.topic_bloc import PLACES, topic_bloc_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize(("size", "mobile"), [(DESKTOP, False), (PHONE, True)], ids=["desktop", "phone"])
def test_the_run_page_and_the_checks_page_name_the_topic_a_bloc_decides(
    browser: Any, live_server: Any, transactional_db: Any, embedder: Any, size: tuple[int, int], mobile: bool
) -> None:
    CuratorFactory(username="carol")
    run, queries = topic_bloc_run()
    set_viewport(browser, size, mobile=mobile)
    log_in(browser, live_server.url, "carol")
    open_page(browser, f"{live_server.url}/runs/{run.pk}/")
    section = WebDriverWait(browser, 30).until(ec.visibility_of_element_located((By.ID, "run-topic-identification")))
    assert "capitals" in section.text and "source-6" in section.text
    assert_no_sideways_scroll(browser, f"run page at {size}", size[0])
    section.find_element(By.ID, "run-topic-checks-link").click()
    WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.ID, "check-intro")))
    assert_no_sideways_scroll(browser, f"checks page at {size}", size[0])
    capitals = {q.pk for q in queries["capitals"]}
    first = next(q for q in run.identification["checks"] if q in capitals)
    card = browser.find_element(By.ID, f"check-{first}")
    assert "settles the topic capitals" in card.text
    right = dict((q, r) for q, r, _ in PLACES)[FactQuery.objects.get(pk=first).question]
    option = next(li for li in card.find_elements(By.CSS_SELECTOR, ".check-answers li") if right in li.text)
    option.find_element(By.TAG_NAME, "button").click()
    WebDriverWait(browser, 30).until(lambda _: FactQuery.objects.get(pk=first).reference_answers == [right])
