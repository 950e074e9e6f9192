"""What a long-running server holds, logged every `log.statsIntervalS` seconds: tasks,
pending messages and the size of each cache. A soak reads these lines to tell a leak
(something that grows while users type) from a cache filling up to its bound."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from server.lsp.language_server import HeadstartServer

log = logging.getLogger(__name__)

PREFIX = "internals: "
"""Starts each line; JSON follows (`benchmarks/load/soak.py` parses it)."""


def internals(ls: HeadstartServer) -> dict[str, int]:
    indexes = list(ls.project.indexes.values())
    return {
        "pid": os.getpid(),
        "tasks": len(asyncio.all_tasks()),
        "pendingMessages": len(ls.protocol._request_futures),
        "documents": len(ls.workspace.text_documents),
        "modelJobs": len(ls.latest),
        "backendConnections": ls.backend.open_connections(),
        "following": len(ls.following),
        "shownSuggestions": len(ls.shown),
        "parsedTrees": len(ls.trees),
        "semanticTokenResults": len(ls.semantic_tokens),
        "cachedTokenCounts": ls.completer.cached_tokens(),
        "indexedFiles": sum(len(index.records) for index in indexes),
        "outlinesInMemory": sum(index.outlines_in_memory() for index in indexes),
    }


async def log_internals(ls: HeadstartServer) -> None:
    """Forever: one line every `log.statsIntervalS` seconds while it is above 0 (the
    setting is read each time, so a change applies without a restart)."""
    while True:
        await asyncio.sleep(ls.settings.log.stats_interval_s or IDLE_CHECK_S)
        if ls.settings.log.stats_interval_s:
            log.info("%s%s", PREFIX, json.dumps(internals(ls), separators=(",", ":")))


IDLE_CHECK_S = 10.0
"""How often a server with the line off looks whether it was turned on."""
