"""The file-level dependency graph: who imports whom, both ways, and n-hop neighbourhoods."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


class DependencyGraph:
    """Edges from a file to the project files it imports, and the reverse edges."""

    def __init__(self) -> None:
        self._imports: dict[str, frozenset[str]] = {}
        self._imported_by: defaultdict[str, set[str]] = defaultdict(set)

    @classmethod
    def from_imports(cls, imports: Iterable[tuple[str, tuple[str, ...]]]) -> DependencyGraph:
        """The graph of (path, the files it imports) pairs, built in one pass."""
        graph = cls()
        imported_by = graph._imported_by
        for path, targets in imports:
            if targets:
                graph._imports[path] = frozenset(targets)
                for target in targets:
                    imported_by[target].add(path)
        return graph

    def set_imports(self, path: str, targets: Iterable[str]) -> None:
        """Replace the outgoing edges of `path`."""
        new = frozenset(targets)
        for old in self._imports.get(path, frozenset()) - new:
            self._imported_by[old].discard(path)
        for target in new:
            self._imported_by[target].add(path)
        self._imports[path] = new

    def remove(self, path: str) -> None:
        """Forget `path`'s own edges; edges pointing at it stay until their owners change."""
        self.set_imports(path, ())
        self._imports.pop(path, None)

    def imports(self, path: str) -> frozenset[str]:
        return self._imports.get(path, frozenset())

    def imported_by(self, path: str) -> frozenset[str]:
        return frozenset(self._imported_by.get(path, ()))

    @property
    def edge_count(self) -> int:
        return sum(len(targets) for targets in self._imports.values())

    def neighbourhood(self, path: str, hops: int = 2, reverse: bool = False) -> dict[str, int]:
        """Files within `hops` import edges of `path` (dependencies, or importers if
        `reverse`), with their distance; `path` itself is not included."""
        step = self.imported_by if reverse else self.imports
        distance = {path: 0}
        frontier = [path]
        for hop in range(1, hops + 1):
            next_frontier = []
            for node in frontier:
                for neighbour in sorted(step(node)):
                    if neighbour not in distance:
                        distance[neighbour] = hop
                        next_frontier.append(neighbour)
            frontier = next_frontier
        del distance[path]
        return distance
