"""The garbage-collector setting for a sweep, applied by the process that runs one.

A sweep keeps thousands of calls in flight for seconds each. At CPython's default
thresholds (700, 10, 10) their objects all survive into the oldest generation, which is
then rescanned, with every imported module, again and again: about 40 % of the client's
CPU at 2,000 concurrent conversations (benchmarks/README.md). The calls almost never
form reference cycles, so for the length of a command vera freezes what exists when it
starts (modules, loaded inputs) out of the collector's view and lets the youngest
generation grow to 50,000 objects.

This is process-wide state, so only the entry points that own the process apply it
(`vera` commands and `vera bench`); library code such as the client pool never does, and
a program embedding vera keeps its own collector settings.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000


@contextmanager
def sweep_collector() -> Iterator[None]:
    """The sweep setting while the block runs; the previous one restored after (and the
    heap unfrozen, unless something had frozen it before: that is not ours to undo)."""
    saved = gc.get_threshold()
    unfreeze = gc.get_freeze_count() == 0
    gc.freeze()
    young, *older = saved
    if young:  # 0 means collection is off: leave it off
        gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
        if unfreeze:
            gc.unfreeze()
