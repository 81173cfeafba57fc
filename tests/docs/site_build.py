"""Building the documentation site and reading it back, for the tests here.

:func:`build` runs ``sphinx-build -n -W`` as CI does (nitpicky, every
warning an error); :func:`rendered` opens a built page in headless Chromium
and returns the DOM after its scripts ran; :func:`broken_links` crawls the
built HTML for internal links whose file or anchor does not exist.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tests.kafka.releases import unavailable
from tests.test_readme import DOCS


def require_sphinx() -> None:
    if importlib.util.find_spec("sphinx") is None:
        unavailable("Sphinx is not installed (pip install -e '.[docs]'; the test command does)", "the docs extra")


def build(source: Path, out: Path, confdir: Path = DOCS) -> subprocess.CompletedProcess[str]:
    """``sphinx-build -n -W --keep-going -b html`` of ``source`` with the
    site's configuration (``confdir``); every warning is on stderr with its
    page and line."""
    require_sphinx()
    return subprocess.run([sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-q", "-b", "html",
                           "-c", str(confdir), str(source), str(out)],
                          capture_output=True, text=True, timeout=600)


#: Chromium without a network: every background connection it would try
#: (updates, sync, QUIC, first-run pages) is off, or it waits on them.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        unavailable("no chromium on PATH (Debian's package chromium; bash .ci/deps installs it)", "Chromium")
    assert found is not None
    return found


def rendered(page: Path, query: str = "", script_ms: int = 10000) -> str:
    """The DOM of ``page`` (a built HTML file) once headless Chromium ran its
    scripts for up to ``script_ms`` of virtual time (the search page fills
    its results from JavaScript)."""
    url = page.resolve().as_uri() + (f"?{query}" if query else "")
    with tempfile.TemporaryDirectory(prefix="kraft-chromium-") as profile:
        done = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                               f"--virtual-time-budget={script_ms}", "--dump-dom", url],
                              capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"chromium exited {done.returncode} on {url}:\n{done.stderr[-2000:]}"
    return done.stdout


class _Anchors(HTMLParser):
    """The ids a page defines and the hrefs it links to."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("name"):
            self.ids.add(str(values["name"]))
        if tag in ("a", "link") and values.get("href"):
            self.hrefs.append(str(values["href"]))


def _parsed(page: Path, cache: dict[Path, _Anchors]) -> _Anchors:
    if page not in cache:
        parser = _Anchors()
        parser.feed(page.read_text(encoding="utf-8"))
        cache[page] = parser
    return cache[page]


def broken_links(site: Path) -> list[str]:
    """Every internal link of the built site whose target file or anchor
    is missing, as ``page: href``."""
    cache: dict[Path, _Anchors] = {}
    broken = []
    for page in sorted(site.rglob("*.html")):
        for href in _parsed(page, cache).hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith("mailto:"):
                continue  # external: not this site's to check
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {href} (no such file)")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _parsed(target, cache).ids:
                broken.append(f"{page.relative_to(site)}: {href} (no such anchor)")
    return broken
