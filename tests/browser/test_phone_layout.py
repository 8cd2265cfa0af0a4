"""Every dashboard page on a phone (390 x 844) and on a desktop (1280 px): the page never
scrolls sideways (wide tables and graphs scroll inside their own box), the nav collapses
behind a "Menu" toggle that opens without script, graph labels stay legible (at least
11 px on the screen) and controls are touch-sized; and axe-core (vendored, run in the
page) finds no serious or critical accessibility violation on any of them (the main pages
named in MAIN_PAGES among them) nor on the login page.

The world (tests/browser/world.py) is demo-like and holds long unbroken words and URLs."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser.helpers import (
    ARTIFACTS,
    PHONE,
    assert_no_sideways_scroll,
    axe_violations,
    csp_violations,
    log_in,
    set_viewport,
    watch_csp,
)
from tests.browser.world import build_world
from tests.factories import AnalystFactory, CuratorFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DESKTOP = (1280, 900)
# What the checks leave out: fragments that htmx swaps into a page, POST-only actions, downloads.
NOT_PAGES = {
    "question-panel",
    "run-result",
    "run-start",
    "run-start-claims",
    "run-resume",
    "job-status",
    "job-cancel",  # a POST action (the job page shows its button)
    "question-votes-csv",
    "question-feedback",
    "run-scores-csv",
}
# The main pages (the world's page names) that axe must check; it checks every other page too.
MAIN_PAGES = {
    "ask",
    "question-detail",
    "history",
    "source-list",
    "source-detail",
    "run-list",
    "run-detail",
    "conflicts",
    "claim-list",
    "job-list",
}

# On-screen size of every graph label: its font size times the SVG's scale.
_SVG_LABELS = """
return [...document.querySelectorAll("main svg text")].filter((t) => t.getClientRects().length).map((t) => ({
  text: t.textContent.trim().slice(0, 30),
  px: parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a,
}));
"""
# Buttons, selects and text fields smaller than a fingertip.
_SMALL_CONTROLS = """
const sel = "main button, main select, main input[type=submit], main input[type=text], main input[type=number], main input[type=date], main input[type=password], main input[type=search], header button, header .nav-toggle-label";
return [...document.querySelectorAll(sel)].filter((c) => c.getClientRects().length).map((c) => {
  const box = c.getBoundingClientRect();
  return {control: c.outerHTML.slice(0, 80), height: box.height};
}).filter((c) => c.height < 44 - 0.5);
"""


def open_page(driver: Any, url: str) -> None:
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
    WebDriverWait(driver, 10).until(ec.presence_of_element_located((By.TAG_NAME, "main")))


def open_details(driver: Any) -> int:
    """Open every disclosure in the page's content (passages, citations, filters, the ask page's
    sources and advanced options), so that what they hold is measured and checked too."""
    return int(
        driver.execute_script(
            "const all = document.querySelectorAll('main details:not([open])');"
            "all.forEach((d) => { d.open = true; }); return all.length"
        )
    )


def assert_legible_graphs(driver: Any, name: str) -> None:
    small = [label for label in driver.execute_script(_SVG_LABELS) if label["px"] < 11 - 0.05]
    assert not small, f"{name}: graph labels under 11 px on the screen: {small[:5]}"


@pytest.fixture
def world(live_server: Any, db: Any) -> dict[str, Any]:
    analyst = AnalystFactory(username="alice")
    curator = CuratorFactory(username="carol")
    paths = build_world(analyst, curator)
    return {"base": live_server.url, "paths": paths, "analyst": analyst, "curator": curator}


def test_every_dashboard_page_is_covered() -> None:
    """A page added to core/urls.py or tasks/urls.py must be added to the world (or to the
    fragments and actions left out), so that the phone check covers it."""
    from django.urls import URLPattern, URLResolver, get_resolver

    names: set[str] = set()

    def walk(patterns: list[Any], namespace: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                module = getattr(p.urlconf_module, "__name__", "")
                if module in ("core.urls", "tasks.urls"):
                    walk(p.url_patterns, module)
            elif isinstance(p, URLPattern) and namespace and p.name:
                names.add(p.name)

    walk(get_resolver().url_patterns, "")
    assert names, "core.urls and tasks.urls are not included in the site's URLs"
    from tests.browser import world as world_module

    covered = set(world_module.PAGE_NAMES) | NOT_PAGES
    assert names <= covered, f"pages the phone check does not visit: {sorted(names - covered)}"


def test_every_page_fits_a_phone_and_its_menu_opens(browser: Any, world: dict[str, Any]) -> None:
    base, paths = world["base"], world["paths"]
    watch_csp(browser)
    set_viewport(browser, PHONE, mobile=True)
    log_in(browser, base, "alice")
    for name, path in paths.items():
        open_page(browser, base + path)
        assert_no_sideways_scroll(browser, name, PHONE[0])
        if open_details(browser):
            assert_no_sideways_scroll(browser, f"{name} (disclosures open)", PHONE[0])
        assert_legible_graphs(browser, name)
        small = browser.execute_script(_SMALL_CONTROLS)
        assert not small, f"{name}: controls under 44 px high: {small[:4]}"

        # The menu is closed: its toggle shows, the links do not (they would overflow).
        toggle = browser.find_element(By.CSS_SELECTOR, "label.nav-toggle-label")
        assert toggle.is_displayed(), name
        links = browser.find_elements(By.CSS_SELECTOR, "header nav a")
        assert len(links) >= 7 and not any(link.is_displayed() for link in links), name
        toggle.click()  # opens with no script: a checkbox's :checked state
        for link in links:
            assert link.is_displayed(), f"{name}: {link.text} hidden in the open menu"
            box = browser.execute_script(
                "const b = arguments[0].getBoundingClientRect(); return [b.left, b.right, b.height]", link
            )
            assert box[0] >= 0 and box[1] <= PHONE[0] and box[2] >= 44, f"{name}: {link.text} at {box}"
        assert browser.find_element(By.CSS_SELECTOR, "header .logout button").is_displayed()
        assert_no_sideways_scroll(browser, f"{name} (menu open)", PHONE[0])
        if name == "ask":
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(ARTIFACTS / "phone-menu-open.png"))  # the viewport as it is
            browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)  # static/js/app.js closes it
            WebDriverWait(browser, 5).until(ec.invisibility_of_element(links[0]))
        else:
            toggle.click()
            assert not links[0].is_displayed(), name
        assert csp_violations(browser) == [], name

    # By keyboard: Tab past the skip link and the brand reaches the toggle; Space opens the menu.
    open_page(browser, base + paths["history"])
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in range(3):
        body = browser.switch_to.active_element
        body.send_keys(Keys.TAB)
    toggle_box = browser.switch_to.active_element
    assert toggle_box.get_attribute("id") == "nav-toggle"
    toggle_box.send_keys(Keys.SPACE)
    assert browser.find_element(By.LINK_TEXT, "Conflicts").is_displayed()

    # The menu's links lead where they say.
    open_page(browser, base + paths["ask"])
    browser.find_element(By.CSS_SELECTOR, "label.nav-toggle-label").click()
    browser.find_element(By.LINK_TEXT, "Jobs").click()
    WebDriverWait(browser, 20).until(lambda d: d.current_url.rstrip("/").endswith("/jobs"))

    # A curator sees more (the run form); it fits too, opened.
    log_in(browser, base, "carol")
    open_page(browser, base + paths["run-list"])
    browser.find_element(By.CSS_SELECTOR, "#start-run summary").click()
    assert browser.find_element(By.ID, "start-run-button").is_displayed()
    assert_no_sideways_scroll(browser, "run-list (curator, form open)", PHONE[0])
    small = browser.execute_script(_SMALL_CONTROLS)
    assert not small, f"run form: controls under 44 px high: {small[:4]}"
    # ... and the checks page of a run agreement did not settle (one click per answer).
    open_page(browser, base + paths["run-checks"])
    assert browser.find_elements(By.CSS_SELECTOR, "section.check button")
    assert_no_sideways_scroll(browser, "run-checks (curator)", PHONE[0])
    small = browser.execute_script(_SMALL_CONTROLS)
    assert not small, f"run checks: controls under 44 px high: {small[:4]}"

    # The login page, signed out.
    browser.delete_all_cookies()
    open_page(browser, f"{base}/login/")
    assert_no_sideways_scroll(browser, "login", PHONE[0])
    assert csp_violations(browser) == []


_CELLS_ON_SCREEN = """
const [selector, labels, width] = arguments;
const row = document.querySelector(selector);
if (!row) return "no row";
const out = {};
for (const label of labels) {
  const cell = row.querySelector(`td[data-label="${label}"]`);
  if (!cell) { out[label] = "missing"; continue; }
  const box = cell.getBoundingClientRect();
  out[label] = box.width > 0 && box.left >= 0 && box.right <= width + 0.5 ? "ok" : `at ${box.left}-${box.right}`;
}
return out;
"""


def test_on_a_phone_the_votes_and_sources_are_cards_that_show_the_key_columns(
    browser: Any, world: dict[str, Any]
) -> None:
    base, paths = world["base"], world["paths"]
    set_viewport(browser, PHONE, mobile=True)
    log_in(browser, base, "alice")
    open_page(browser, base + paths["question-detail"])
    votes = ["Source", "Reliability", "Said", "Vote weight"]
    seen = browser.execute_script(_CELLS_ON_SCREEN, "#vote-table tbody tr", votes, PHONE[0])
    assert seen == {label: "ok" for label in votes}, seen
    groups = ["Answer", "Share", "Sources behind it"]
    seen = browser.execute_script(_CELLS_ON_SCREEN, "table.clusters tbody tr", groups, PHONE[0])
    assert seen == {label: "ok" for label in groups}, seen
    # Each cell says which column it is (the header row is for screen readers only).
    label = browser.execute_script(
        "return getComputedStyle(document.querySelector('#vote-table td[data-label=\"Said\"]'), '::before').content"
    )
    assert "Said" in label
    open_page(browser, base + paths["source-list"])
    sources = ["Source", "Reliability", "Answers"]
    seen = browser.execute_script(_CELLS_ON_SCREEN, "#source-table tbody tr", sources, PHONE[0])
    assert seen == {label: "ok" for label in sources}, seen
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "phone-source-cards.png"))
    # On a desktop the same tables stay tables.
    set_viewport(browser, DESKTOP, mobile=False)
    open_page(browser, base + paths["source-list"])
    assert browser.execute_script("return getComputedStyle(document.querySelector('#source-table tr')).display") == (
        "table-row"
    )


def test_every_page_fits_a_desktop_with_the_nav_in_view(browser: Any, world: dict[str, Any]) -> None:
    base, paths = world["base"], world["paths"]
    set_viewport(browser, DESKTOP, mobile=False)
    log_in(browser, base, "carol")
    for name, path in paths.items():
        open_page(browser, base + path)
        open_details(browser)
        assert_no_sideways_scroll(browser, name, DESKTOP[0])
        assert not browser.find_element(By.CSS_SELECTOR, "label.nav-toggle-label").is_displayed(), name
        links = browser.find_elements(By.CSS_SELECTOR, "header nav a")
        assert links and all(link.is_displayed() for link in links), name
        tops = {round(link.location["y"]) for link in links}
        assert len(tops) == 1, f"{name}: the nav wraps at {DESKTOP[0]} px"

    # Keyboard users skip the nav: the first Tab shows the skip link, Enter moves to the content.
    open_page(browser, base + paths["history"])
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    skip = browser.switch_to.active_element
    assert skip.get_attribute("class") == "skip-link" and skip.is_displayed()
    assert skip.location["y"] >= 0  # moved into view while focused
    skip.send_keys(Keys.ENTER)
    WebDriverWait(browser, 5).until(lambda d: d.switch_to.active_element.get_attribute("id") == "main")
    assert browser.current_url.startswith(base + paths["history"])


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_pages_have_no_serious_accessibility_violation(browser: Any, world: dict[str, Any], viewport: str) -> None:
    base, paths = world["base"], world["paths"]
    if viewport == "phone":
        set_viewport(browser, PHONE, mobile=True)
    else:
        set_viewport(browser, DESKTOP, mobile=False)
    browser.delete_all_cookies()
    open_page(browser, f"{base}/login/")
    found = {"login": axe_violations(browser)}
    log_in(browser, base, "alice")
    assert set(paths) >= MAIN_PAGES
    for name, path in paths.items():
        open_page(browser, base + path)
        open_details(browser)  # the passages, citations and forms inside disclosures too
        found[name] = axe_violations(browser)
    found = {name: v for name, v in found.items() if v}
    assert not found, "\n".join(f"{name}: {v}" for name, vs in found.items() for v in vs)


_BOX = "const r = arguments[0].getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom];"


@pytest.mark.parametrize("viewport", ["phone", "desktop"])
def test_a_colluding_pair_is_flagged_on_the_source_list_and_on_its_sources_page_on_screen(
    browser: Any, world: dict[str, Any], viewport: str
) -> None:
    """The world's two colluding sources (rumour-mill and echo-blog-...) each carry a badge
    naming the other in the source list, visible within the screen's width at both widths,
    and the badge leads to the evidence; the colluder's own page says so near its top."""
    base, paths = world["base"], world["paths"]
    size, mobile = (PHONE, True) if viewport == "phone" else (DESKTOP, False)
    set_viewport(browser, size, mobile=mobile)
    log_in(browser, base, "alice")
    open_page(browser, base + paths["source-list"])
    badges = [b for b in browser.find_elements(By.CSS_SELECTOR, "#source-table a.collusion-badge") if b.is_displayed()]
    texts = sorted(b.text for b in badges)
    assert len(texts) == 2, texts
    assert "echo-blog-with-a-rather-long-name" in texts[0] and "rumour-mill" in texts[1], texts
    assert all(t.startswith(("copies with", "colludes with")) for t in texts), texts
    for badge in badges:
        left, right, _, _ = browser.execute_script(_BOX, badge)
        assert left >= 0 and right <= size[0] + 0.5, (badge.text, left, right)
    href = badges[0].get_attribute("href")
    assert "#copying" in href
    open_page(browser, href)
    assert browser.find_element(By.ID, "copying").is_displayed()
    open_page(browser, base + paths["source-detail"])
    notice = browser.find_element(By.ID, "source-collusion")
    assert notice.is_displayed() and "rumour-mill" in notice.text
    left, right, top, _ = browser.execute_script(_BOX, notice)
    assert left >= 0 and right <= size[0] + 0.5 and top < size[1] * 2, (left, right, top)
    assert notice.find_element(By.LINK_TEXT, "See the evidence").is_displayed()
    assert_no_sideways_scroll(browser, "source-detail", size[0])
