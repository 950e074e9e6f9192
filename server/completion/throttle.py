"""Speculative work backs off when the backend slows.

A shared GPU serves many editors. Continuing a stream past the shown line and prefetching
the next suggestion make later keystrokes cheaper, but they are requests no one waits for
yet, and under load they delay the keystrokes people do wait for. So the server watches
its own model requests' first-chunk times and pauses that work while they are over a
budget, resuming with some hysteresis once the backend has recovered. While paused,
keystroke prompts are smaller too (`completion.contextTokensUnderLoad`): what a loaded GPU
runs out of is prompt tokens to compute.
"""

from __future__ import annotations

import logging
import statistics
from collections import deque
from typing import Final

log = logging.getLogger(__name__)

WINDOW: Final = 8
"""First-chunk times the decision reads: the median of the last few requests, so one slow
request (a cold prefix, a long prompt) does not pause anything."""
RESUME_SHARE: Final = 0.7
"""Work resumes once the median is back under this share of the budget, so that a median
near the budget does not switch it on and off at every request."""
CALM_REQUESTS: Final = 32
"""Prompts stay small for this many requests after background work resumed. Another
budget changes the whole prompt, which the backend then computes cold: switching at every
pause and resume would cost more than the smaller prompts save."""


class BackgroundThrottle:
    """Whether speculative requests may be sent now, from the recent first chunks."""

    def __init__(self, budget_ms: float) -> None:
        self.budget_ms = budget_ms
        """0 turns the throttle off: speculative work is never paused."""
        self.paused = False
        self.small_prompts = False
        """Whether keystroke prompts get `completion.contextTokensUnderLoad`: from a pause
        until CALM_REQUESTS requests after the resume."""
        self._calm = 0
        self._first_chunks_ms: deque[float] = deque(maxlen=WINDOW)

    def observe(self, first_chunk_ms: float) -> None:
        """Record the first-chunk time of a model request, and pause or resume."""
        self._first_chunks_ms.append(first_chunk_ms)
        if self.budget_ms <= 0 or len(self._first_chunks_ms) < WINDOW:
            self._set(False, None)
            self.small_prompts = False  # a pause needs a full window, which stays full
            return
        median = statistics.median(self._first_chunks_ms)
        if not self.paused and median > self.budget_ms:
            self._set(True, median)
        elif self.paused and median < self.budget_ms * RESUME_SHARE:
            self._set(False, median)
        self._settle_prompts()

    def _settle_prompts(self) -> None:
        if self.paused:
            self.small_prompts, self._calm = True, 0
        elif self.small_prompts:
            self._calm += 1
            if self._calm >= CALM_REQUESTS:
                self.small_prompts = False
                log.info(
                    "prompts get completion.contextTokens again: %d requests since background "
                    "work resumed",
                    self._calm,
                )

    @property
    def state(self) -> str:
        """'paused' or 'on', as the completion report shows it."""
        return "paused" if self.paused else "on"

    def _set(self, paused: bool, median: float | None) -> None:
        if paused == self.paused:
            return
        self.paused = paused
        if paused:
            log.warning(
                "background work paused: the model's first chunks take %.0f ms (median of "
                "the last %d), over completion.backgroundThrottleMs %.0f; continuations and "
                "prefetches stop until they are back under %.0f ms, and prompts get "
                "completion.contextTokensUnderLoad until %d requests after that",
                median,
                WINDOW,
                self.budget_ms,
                self.budget_ms * RESUME_SHARE,
                CALM_REQUESTS,
            )
        elif median is not None:
            log.info("background work resumed: the model's first chunks take %.0f ms again", median)
        else:
            log.info("background work resumed")
