"""The cyclic garbage collector, paused while a decoder builds objects in bulk.

Decoding a log allocates an object or more per record (tuples, strings,
messages) and frees few, so the collector's passes would walk what has been
built again and again -- in the Spark reader half of a stress log's CPU, in
the shell's replay about a tenth -- and find nothing: what the decoders
build holds no reference cycle. Memory is still freed as usual by reference
counting; only the search for cycles waits until the work is done.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic collector for the block (a no-op when it is off
    already: a caller's choice is kept). ``freeze``: what the block built is
    kept for long (a loaded image), so it is moved out of the collector's
    sight (:func:`gc.freeze`) before the collector resumes; its first pass
    would otherwise walk all of it to find nothing."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            if freeze:
                gc.freeze()
            gc.enable()
