"""What changed between two images, in the shell's tree form.

Both images are walked as the shell shows them (:mod:`kraft.image.tree`),
so every area is covered the same way: topics and partitions (leader, ISR,
replicas), configs, client quotas, brokers and their fencing, controllers,
features, ACLs, SCRAM users, delegation tokens, producer ids. One line per
change, in path order::

    + /image/topics/byName/foo/0: PartitionRegistration(...)      added
    - /image/configs/TOPIC:bar/retention.ms: 86400000              removed
    ~ /image/cluster/brokers/1                                      changed
        - BrokerRegistration(..., fenced=false, ...)
        + BrokerRegistration(..., fenced=true, ...)

An added or removed directory is shown with every leaf under it.
``/image/topics/byId`` repeats ``byName`` and ``/image/provenance`` always
changes, so both are left out.
"""

from __future__ import annotations

from collections.abc import Iterator

from kraft.image.printing import NodeStringifier, ShellNodePrinter, java_sorted
from kraft.image.tree import MetadataNode

__all__ = ["diff_trees", "SKIPPED"]

SKIPPED = frozenset({"/image/topics/byId", "/image/provenance", "/local"})


def _leaf_text(node: MetadataNode) -> str:
    printer = ShellNodePrinter()
    node.print(printer)
    return printer.text().rstrip("\n")


def _one_line(node: MetadataNode) -> str:
    s = NodeStringifier()
    node.print(s)
    return str(s)


def _leaves(path: str, node: MetadataNode) -> Iterator[tuple[str, str]]:
    if path in SKIPPED:
        return
    if not node.is_directory:
        yield path, _leaf_text(node)
        return
    children = java_sorted(node.child_names())
    if not children:
        yield path + "/", ""
    for name in children:
        child = node.child(name)
        if child is not None:
            yield from _leaves(f"{path}/{name}", child)


def diff_trees(before: MetadataNode, after: MetadataNode, path: str = "") -> Iterator[str]:
    """Lines describing how ``after`` differs from ``before`` (nothing when equal)."""
    if path in SKIPPED:
        return
    if before.is_directory != after.is_directory:
        yield from _removed(path, before)
        yield from _added(path, after)
        return
    if not before.is_directory:
        old, new = _leaf_text(before), _leaf_text(after)
        if old != new:
            yield f"~ {path}"
            yield f"    - {old}"
            yield f"    + {new}"
        return
    old_names, new_names = set(before.child_names()), set(after.child_names())
    for name in java_sorted(old_names | new_names):
        child_path = f"{path}/{name}"
        old_child = before.child(name) if name in old_names else None
        new_child = after.child(name) if name in new_names else None
        if old_child is None and new_child is not None:
            yield from _added(child_path, new_child)
        elif new_child is None and old_child is not None:
            yield from _removed(child_path, old_child)
        elif old_child is not None and new_child is not None:
            if _one_line(old_child) != _one_line(new_child):
                yield from diff_trees(old_child, new_child, child_path)


def _added(path: str, node: MetadataNode) -> Iterator[str]:
    for leaf, text in _leaves(path, node):
        yield f"+ {leaf}: {text}" if text else f"+ {leaf}"


def _removed(path: str, node: MetadataNode) -> Iterator[str]:
    for leaf, text in _leaves(path, node):
        yield f"- {leaf}: {text}" if text else f"- {leaf}"
