"""Every ``path/file.py`` a docstring, a comment, the README or a page of the
documentation site (``docs/``) cites exists
(issue 34: docstrings named ``kraft/wire/not_controller.py``, while the
package lives in ``wire/``). Paths are relative to the repository root, as
a reader types them; a path that only exists inside the installed package
(``kraft/wire/...``) is wrong here, because a reader cannot open it.

Examples of the convention itself are exempt where they say so
(:data:`EXAMPLES`, :data:`ABOUT_THE_CONVENTION`).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from tests.test_readme import doc_pages

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("kraft", "wire", "records", "messages", "tools", "tests")
#: A cited path: one or more folders, then a ``.py`` file.
CITED = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.py)\b")
#: Placeholders in text that explains a convention (tests/test_readme.py).
EXAMPLES = frozenset({"tests/x.py", "tests/x/test_y.py"})
#: Files whose text is about the convention itself: the static checks' link
#: tree explains that it names ``kraft/wire/...`` paths, and this test
#: quotes the wrong citation it was written for.
ABOUT_THE_CONVENTION = frozenset({"tests/static_checks.py", "tests/test_cited_paths.py"})


def _texts(path: Path) -> Iterator[str]:
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield doc
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.string


@functools.cache
def cited_paths() -> dict[str, set[str]]:
    """Each cited path, with the files citing it."""
    cited: dict[str, set[str]] = {}
    files = [p for base in SOURCES for p in (ROOT / base).rglob("*.py")
             if "generated" not in p.parts and ".venv" not in p.parts]
    for path in files:
        where = str(path.relative_to(ROOT))
        if where in ABOUT_THE_CONVENTION:
            continue
        for text in _texts(path):
            for match in CITED.finditer(text):
                cited.setdefault(match.group(1), set()).add(where)
    for page in doc_pages():
        for match in CITED.finditer(page.read_text()):
            cited.setdefault(match.group(1), set()).add(str(page.relative_to(ROOT)))
    return cited


def test_every_cited_path_exists() -> None:
    cited = cited_paths()
    missing = {path: sorted(where) for path, where in cited.items()
               if path not in EXAMPLES and not (ROOT / path).is_file()}
    assert not missing, f"cited but not in the repository: {missing}"


def test_the_scan_finds_citations() -> None:
    # A pattern that matched nothing would pass the test above trivially.
    cited = cited_paths()
    assert "kraft/raft/families/common.py" in cited
    assert "README.md" in cited["wire/sasl.py"] or "kraft/node/controller_apis.py" in cited["wire/sasl.py"]
    assert "docs/concepts/raft-core.md" in cited["kraft/raft/families/common.py"]  # the site's pages are read
    assert CITED.findall("see kraft/wire/not_controller.py, and x.py") == ["kraft/wire/not_controller.py"]
