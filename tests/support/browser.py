"""A real headless browser for the Locks tab tests: Debian's Chromium with its WebDriver, driven
by Selenium (nothing fetched at run time), and what the tests do with it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
UPDATE_SCREENSHOTS = os.environ.get("SPARKLOCK_UPDATE_SCREENSHOTS") == "1"
#: The flags that work in these containers (no sandbox, no GPU, nothing fetched in the background).
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1100",
)


@contextmanager
def chromium(profile: Path) -> Iterator:
    """One headless Chromium with a fresh profile in ``profile``; skips, saying what to
    install, where Chromium or Selenium is missing."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("chromium is not installed (apt-get install -y chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (the dev extra has it)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def page_shows(browser, url: str, css: str, text: str) -> Callable[[], bool]:
    """A check that reloads the page and looks for ``text`` in the element ``css``."""
    from selenium.webdriver.common.by import By

    def check() -> bool:
        browser.get(url)
        found = browser.find_elements(By.CSS_SELECTOR, css)
        return any(text in e.text for e in found)

    return check


def screenshot(browser, tmp_path: Path, name: str) -> Path:
    """The page as a PNG in the test's tmp dir, and in docs/images when asked to update it."""
    shot = tmp_path / name
    browser.get_screenshot_as_file(str(shot))
    assert shot.stat().st_size > 10_000
    if UPDATE_SCREENSHOTS:
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_IMAGES / name)
    return shot
