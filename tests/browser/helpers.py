"""Helpers shared by the browser tests: logging in, the phone viewport, sideways scroll and axe checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.factories import PASSWORD

WAIT = 180  # seconds: the worker loads the models on its first task


def log_in(driver: Any, base: str, username: str) -> None:
    """Log ``username`` in from a clean session (any earlier login's cookies dropped)."""
    driver.delete_all_cookies()
    driver.get(f"{base}/login/")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.ID, "login-button").click()
    WebDriverWait(driver, 30).until(ec.presence_of_element_located((By.ID, "ask-form")))


PHONE = (390, 844)


AXE = Path(__file__).with_name("vendor") / "axe.min.js"


# Elements that stick out of the viewport with no ancestor that scrolls or clips them: the
# culprits of a sideways-scrolling page.
_OFFENDERS = """
const width = arguments[0];
const out = [];
for (const el of document.body.querySelectorAll("*")) {
  const box = el.getBoundingClientRect();
  if (box.width === 0 || box.right <= width + 0.5) continue;
  let contained = false;
  // An absolute box is clipped only by scroll boxes from its containing block (offsetParent) up.
  const position = getComputedStyle(el).position;
  const start = position === "absolute" ? el.offsetParent : position === "fixed" ? null : el.parentElement;
  for (let a = start; a && a !== document.body; a = a.parentElement) {
    if (["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(a).overflowX)) { contained = true; break; }
  }
  if (!contained) {
    out.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className && el.className.baseVal === undefined ? "." + String(el.className).trim().split(/\\s+/).join(".") : ""} right=${Math.round(box.right)}`);
  }
}
return out.slice(0, 8);
"""


def set_viewport(driver: Any, size: tuple[int, int], *, mobile: bool) -> None:
    width, height = size
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
    )


def assert_no_sideways_scroll(driver: Any, name: str, width: int) -> None:
    scroll_width = driver.execute_script("return document.documentElement.scrollWidth")
    inner_width = driver.execute_script("return window.innerWidth")
    offenders = driver.execute_script(_OFFENDERS, width)
    assert scroll_width <= inner_width and scroll_width <= width, (
        f"{name}: the page is {scroll_width} px wide in a {width} px viewport; sticking out: {offenders}"
    )


def axe_violations(driver: Any, *, impacts: tuple[str, ...] = ("serious", "critical")) -> list[str]:
    """Run axe-core in the page (injected through the driver, which the CSP does not govern)
    and describe each violation of the given impacts with the elements it found."""
    if not driver.execute_script("return typeof window.axe === 'object'"):
        driver.execute_script(AXE.read_text(encoding="utf-8"))
    driver.set_script_timeout(60)
    violations = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then((r) => done(r.violations), (e) => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:4]]}"
        for v in violations
        if v["impact"] in impacts
    ]
