"""The documentation site, checked as a reader sees it: built as CI builds
it (``sphinx-build -n -W``: a broken cross-reference fails with its page and
line), then read in headless Chromium: the getting-started page shows its
code blocks, the search page finds ``witness``, and no internal link of the
built site leads nowhere."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.docs.site_build import broken_links, build, rendered
from tests.test_readme import DOCS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(DOCS, out)
    assert done.returncode == 0, f"sphinx-build -n -W failed:\n{done.stderr}"
    return out


def test_the_site_builds_with_every_page_and_reference(site: Path) -> None:
    for page in ("index", "getting-started", "beside-kafka/witness", "beside-kafka/controller",
                 "reference/cli", "reference/api", "reference/config", "reference/exit-codes"):
        assert (site / f"{page}.html").is_file(), page
    cli = (site / "reference" / "cli.html").read_text()
    # Every option of dump-log, from the click app.
    for option in ("files", "deep-iteration", "cluster-metadata-decoder", "skip-record-metadata", "json"):
        assert f'id="cmdoption-kraft-dump-log-{option}"' in cli, option
    config = (site / "reference" / "config.html").read_text()
    assert "controller.quorum.fetch.timeout.ms" in config and "kraft.witness" in config
    codes = (site / "reference" / "exit-codes.html").read_text()
    assert "EXIT_STORAGE" in codes and "EXIT_INTERRUPTED" in codes


def test_the_getting_started_page_renders_its_code_blocks(site: Path) -> None:
    dom = rendered(site / "getting-started.html")
    blocks = re.findall(r'<div class="highlight-(\w+) notranslate">', dom)
    source = (DOCS / "getting-started.md").read_text()
    assert len(blocks) == source.count("\n```") // 2 and "console" in blocks
    pre = re.search(r'<div class="highlight-console notranslate">.*?</pre>', dom, re.DOTALL)
    assert pre is not None and "kraft quickstart" in re.sub(r"<[^>]+>", "", pre.group(0))


def test_the_search_page_finds_the_witness(site: Path) -> None:
    dom = rendered(site / "search.html", query="q=witness")
    results = re.search(r'<ul[^>]*class="search"[^>]*>(.*?)</ul>', dom, re.DOTALL)
    assert results is not None, "the search page listed no results"
    assert 'href="beside-kafka/witness.html' in results.group(1)


def test_no_internal_link_is_broken(site: Path) -> None:
    assert broken_links(site) == []


def test_the_link_check_sees_a_broken_link(site: Path, tmp_path: Path) -> None:
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    page = copy / "getting-started.html"
    page.write_text(page.read_text().replace("</body>", '<a href="nowhere.html">x</a>'
                                             '<a href="index.html#no-such-heading">y</a></body>'))
    assert broken_links(copy) == ["getting-started.html: nowhere.html (no such file)",
                                  "getting-started.html: index.html#no-such-heading (no such anchor)"]


def test_a_broken_reference_fails_the_build_naming_page_and_line(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "index.md").write_text("# A page\n\nText.\n\nSee [the missing page](missing.md) and\n"
                                     "{py:class}`kraft.node.node.NoSuchNode`.\n")
    done = build(source, tmp_path / "out")
    assert done.returncode != 0
    assert re.search(r"index\.md:5: WARNING: .*missing\.md", done.stderr), done.stderr
    assert re.search(r"index\.md:\d+: WARNING: py:class reference target not found: "
                     r"kraft\.node\.node\.NoSuchNode", done.stderr), done.stderr
