"""Sphinx configuration of kraft's documentation site.

Built with ``sphinx-build -n -W docs OUT`` (tests/docs/test_site.py does, in
CI): nitpicky, every warning an error, so a broken cross-reference fails the
build with its page and line. The pages are Markdown (myst-parser); the
reference pages are generated from the code (sphinx-click, autodoc, and the
tables of ``docs/_ext/kraft_tables.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "kraft"
author = "the kraft authors"
copyright = "the kraft authors, Apache-2.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_click",
    "kraft_tables",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# Markdown: `[text](page.md#a-heading)` links to headings down to level 3;
# a link to a heading that does not exist is a warning, so an error.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

html_theme = "furo"
html_title = "kraft"
html_static_path: list[str] = []
# The site is read from the build directory or any static host: no source
# links to a forge that may not exist.
html_show_sourcelink = False

# The API reference: type hints in the description, where a reader looks;
# members in source order, as the modules tell their story.
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
autodoc_preserve_defaults = True
add_module_names = False

nitpicky = True
# The build is offline (no intersphinx): objects of the standard library and
# of the libraries kraft builds on cannot be linked, and are not errors.
# Everything of kraft's own that a page or a documented docstring names must
# resolve.
nitpick_ignore_regex = [
    (r"py:.*", r"(?!kraft\.)[a-z_][\w.]*\.\w+"),    # trio.Nursery, pathlib.Path, collections.abc.Mapping ...
    (r"py:class", r"(?!kraft)[A-Za-z_]\w*"),       # int, str, Path, Mapping, Exception ...
]
# Internal parts the embedding API exposes as attributes or takes as
# optional arguments: named in signatures, not documented (not stable).
nitpick_ignore = [("py:class", name) for name in (
    "kraft.node.raft_driver.RaftDriver",
    "kraft.node.raft_metrics.RaftMetrics",
    "kraft.node.witness_detector.WitnessDetector",
    "kraft.node.controller_apis.ControllerApis",
    "kraft.node.controller_server.ControllerServer",
    "kraft.node.fault.FaultHandler",
    "kraft.records.log.MetadataLog",
    "kraft.raft.quorum_config.QuorumConfig",
    "kraft.raft.witness_policy.WitnessDecision",
    "kraft.raft.witness_policy.WitnessMode",
    "kraft.wire.connection_limits.ConnectionLimits",
    "kraft.wire.connection_limits.ConnectionTracker",
    "kraft.wire.security.ClientSecurity",
    "kraft.wire.security.ListenerSecurity",
    "kraft.wire.security.ScramCredentialStore",
)] + [
    ("py:func", "replayed_api_versions"),     # a test-only helper KraftNode's docstring names
    ("py:mod", "kraft.node.snapshots"),
    ("py:meth", "LogView.end_offset_for_epoch"),  # the log's read view, internal
]
