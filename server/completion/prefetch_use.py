"""Prefetches back off while nobody uses them.

After a block suggestion the server asks at once for the one that would follow its
acceptance, so that accepting the block shows the next suggestion without a wait. That
request pays only when the block is accepted; for a user who seldom accepts blocks it is
load on the shared GPU for nothing, and prefetches are over a quarter of the requests a
typing user sends (29% for 10 users of `headstart bench` on one H200). So the server keeps the fate
of its last prefetches: while fewer than `MIN_USED_SHARE` of the last `WINDOW` were used,
it sends only every `PROBE_EVERY`-th one, which is enough to notice when they are used
again.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Final

log = logging.getLogger(__name__)

WINDOW: Final = 10
"""Prefetches whose fate the decision reads."""
MIN_USED_SHARE: Final = 0.2
"""Below this share of used prefetches, only probes are sent."""
PROBE_EVERY: Final = 5
"""While backing off, one prefetch in this many is still sent."""


class PrefetchUse:
    """Whether the next prefetch is worth sending, from what became of the last ones."""

    def __init__(self) -> None:
        self._used: deque[bool] = deque(maxlen=WINDOW)
        self._ready: dict[str, str] = {}
        """Per document, the prefetched suggestion waiting to be served."""
        self._skipped = 0
        self.backing_off = False

    def wanted(self) -> bool:
        """Whether to send the prefetch now asked for (every call counts as one asked)."""
        if not self.backing_off:
            return True
        self._skipped += 1
        if self._skipped < PROBE_EVERY:
            return False
        self._skipped = 0
        return True

    def ready(self, uri: str, text: str) -> None:
        """A prefetched suggestion for `uri` can be served now; one that still waited
        there was not used."""
        self.moved_on(uri)
        self._ready[uri] = text

    def wasted(self) -> None:
        """A prefetch ended with nothing to serve: cancelled (the user typed on), failed,
        or empty."""
        self._record(False)

    def served(self, uri: str, rest: str, typed: int) -> None:
        """The suggestion cache answered at `uri` with `rest` of a suggestion of which
        `typed` characters were typed (or accepted): the prefetch was used if it is that
        suggestion."""
        text = self._ready.get(uri)
        if text is not None and len(text) == typed + len(rest) and text.endswith(rest):
            del self._ready[uri]
            self._record(True)

    def moved_on(self, uri: str) -> None:
        """The user's next suggestion for `uri` needed the model (or another prefetch
        came): the one waiting there was not used."""
        if self._ready.pop(uri, None) is not None:
            self._record(False)

    def forget(self, uri: str) -> None:
        """`uri` was closed; its waiting prefetch counts for nothing."""
        self._ready.pop(uri, None)

    @property
    def state(self) -> str:
        """'probing' while backing off, else 'on', as the completion report shows it."""
        return "probing" if self.backing_off else "on"

    def _record(self, used: bool) -> None:
        self._used.append(used)
        share = sum(self._used) / len(self._used)
        if not self.backing_off and len(self._used) == WINDOW and share < MIN_USED_SHARE:
            self.backing_off = True
            self._skipped = 0
            log.info(
                "prefetches back off: %d of the last %d were used; one in %d is sent until "
                "they are used again",
                sum(self._used),
                WINDOW,
                PROBE_EVERY,
            )
        elif self.backing_off and share >= MIN_USED_SHARE:
            self.backing_off = False
            log.info("prefetches resume: %d of the last %d were used", sum(self._used), WINDOW)
