"""Garbage collection for a process whose caches hold ~10^5 long-lived objects.

Those objects are frozen (`gc.freeze`, moved out of the collected generations) once they
are made, so that collections stop walking them: a full collection over them takes 20-110
ms. A freeze also takes whatever else is alive at that moment: the asyncio tasks, HTTP
connections and exceptions of the requests in flight. When those die later in a reference
cycle (most do), nothing collects them: a server that froze at every opened document kept
about a hundred closed connections and their streams per server every few minutes, about
0.5 MB a minute while its user typed. So at most every `FULL_COLLECTION_EVERY_S`, a
freeze first unfreezes everything and collects the whole heap (55-60 ms measured on the
bench's workspace).
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Final

FULL_COLLECTION_EVERY_S: Final = 300.0
"""How long frozen cyclic garbage may wait to be collected."""

_lock = threading.Lock()
_last_full = time.monotonic()
"""When the whole heap was last collected (the start of the process counts)."""


def freeze(collect: bool = True) -> None:
    """Freeze what is alive, after collecting the unfrozen generations (`collect`), or the
    whole heap when the last full collection is `FULL_COLLECTION_EVERY_S` old."""
    global _last_full
    with _lock:
        now = time.monotonic()
        if now - _last_full >= FULL_COLLECTION_EVERY_S:
            _last_full = now
            gc.unfreeze()
            gc.collect()
        elif collect:
            gc.collect()
        gc.freeze()
