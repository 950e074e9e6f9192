"""requirements/dev.lock against pyproject.toml: every dependency of the dev environment is
pinned, at a version its requirement allows, so `make`'s install (`pip install -c
requirements/dev.lock -e '.[dev]'`) installs what the lock says and nothing unpinned.

A dependency changed in pyproject.toml without `make lock` fails here, not on a fresh
machine later.
"""

from __future__ import annotations

import re
import tomllib

from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCK = (ROOT / "requirements" / "dev.lock").read_text()


def locked() -> dict[str, Version]:
    """name → pinned version, from the lock's `name==version ; markers` lines."""
    pins = {}
    for line in LOCK.splitlines():
        found = re.match(r"([A-Za-z0-9._-]+)==([^ ;]+)", line)
        if found:
            pins[canonicalize_name(found.group(1))] = Version(found.group(2))
    return pins


def dev_requirements() -> list[Requirement]:
    """The requirements of `.[dev]`: the project's, dev's and the extras dev names."""
    project = PYPROJECT["project"]
    name = canonicalize_name(project["name"])
    extras = project["optional-dependencies"]
    wanted, seen, requirements = ["dev"], set(), [Requirement(r) for r in project["dependencies"]]
    while wanted:
        extra = wanted.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in extras[extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == name:
                wanted.extend(requirement.extras)
            else:
                requirements.append(requirement)
    return requirements


def test_every_dev_dependency_is_pinned_where_its_requirement_allows() -> None:
    pins = locked()
    unpinned, outside = [], []
    for requirement in dev_requirements():
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            unpinned.append(str(requirement))
        elif not requirement.specifier.contains(pin, prereleases=True):
            outside.append(f"{requirement} (locked {pin})")
    assert not unpinned and not outside, (
        f"run `make lock`: requirements/dev.lock lacks {unpinned}, pins outside {outside}"
    )


def test_the_lock_says_how_it_was_made() -> None:
    """Its header is the command `make lock` runs, so it is remade the same way."""
    makefile = (ROOT / "Makefile").read_text()
    assert "-c $(LOCK) -e '.[dev]'" in makefile  # the install step uses it
    assert "uv pip compile pyproject.toml --extra dev --universal --python-version 3.11" in LOCK
