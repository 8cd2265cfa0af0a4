"""Helpers shared by the browser tests: the seeded world's facts, logging in, screenshots, the
Content-Security-Policy watch, the phone viewport, sideways scroll and axe checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.factories import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"

FACTS = {
    # source name -> (documents, reliable?)
    "encyclopedia": True,
    "almanac": True,
    "gazette": True,
    "rumour-mill": False,
    "echo-blog": False,
}
TRUE_DOCS = [
    ("Dracula", "The novel Dracula was written by Bram Stoker and published in 1897."),
    ("Eiffel Tower", "The Eiffel Tower is located in Paris. It was completed in 1889 for the World's Fair."),
    ("Mount Everest", "Mount Everest is the highest mountain on Earth, rising 8849 metres above sea level."),
]
FALSE_DOCS = [
    ("Dracula", "The novel Dracula was written by Mary Shelley and published in 1897."),
    ("Eiffel Tower", "The Eiffel Tower is located in Lyon. It was completed in 1889 for the World's Fair."),
    ("Mount Everest", "Mount Everest is the highest mountain on Earth, rising 7200 metres above sea level."),
]
QUERIES = [
    ("Who wrote the novel Dracula?", ["Bram Stoker"]),
    ("In which city is the Eiffel Tower located?", ["Paris"]),
    ("How high is Mount Everest in metres?", ["8849"]),
]


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


def screenshot(driver: Any, name: str) -> Path:
    """Save a full-page screenshot into test-artifacts/browser/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    script = "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
    height = 800
    for _ in range(3):  # the layout (vh units, wrapping) changes with the viewport: measure again
        height = min(max(int(driver.execute_script(script)), 800), 5000)
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return path


# The Content-Security-Policy refuses inline script and style: a page that still relied on
# them would half work. Violations are collected from the first byte of every page (a script
# added through the DevTools protocol runs before the page's own, and the policy does not apply to it).
_WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


def watch_csp(driver: Any) -> None:
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _WATCH_CSP})


def csp_violations(driver: Any) -> list[str]:
    return list(driver.execute_script("return window.__cspViolations || []"))
