"""The project store: round trips, upserts and deletes, and distrust of anything it did not
write itself (other schema, root or user, loose permissions, damaged or hostile data), plus
two processes writing at once. Also the fingerprint helpers the warm start relies on."""

from __future__ import annotations

import logging
import os
import pickle
import stat
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import diskcache
import pytest
import xxhash

from cache import store as store_module
from cache.fingerprint import FileStat, changed, digest, digest_file
from cache.model import Definition, FileRecord, ImportRef, Outline
from cache.store import SCHEMA_VERSION, ProjectStore, project_store_dir
from cache.user_dirs import headstart_cache_dir

ROOT = Path(__file__).resolve().parent.parent


OUTLINE = Outline(
    "python",
    (
        Definition("class", "Item", "Item", "class Item:", "An item.", 0, 9),
        Definition("method", "add", "Item.add", "def add(self, n: int) -> None:", None, 3, 5),
    ),
    (ImportRef("..models", ("Base",), 1), ImportRef("os")),
)


def record(path: str, version: int = 0) -> FileRecord:
    """A record as the store gives it back: without its outline."""
    return FileRecord(
        path, "python", 100 + version, 1_700_000_000_000_000_000 + version,
        f"{version:016x}", None, ("models.py",), (("..models", ("Base",)), ("os", ())),
    )  # fmt: skip


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def cache_root(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def discard_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "cache.store" and r.levelno >= logging.WARNING
    ]


def raw_cache(store_dir: Path, disk: type[diskcache.Disk] = diskcache.Disk) -> diskcache.Cache:
    """The store as plain diskcache, to damage it the way other programs could."""
    return diskcache.Cache(str(store_dir), eviction_policy="none", disk=disk)


A_BUCKET = store_module._bucket_key("a.py")
"""The entry that holds the record of a.py (with those of other paths of its hash)."""


def plant_bucket(store_dir: Path, bucket: object) -> None:
    """A well-checksummed pickle of `bucket` where a.py's record is."""
    payload = pickle.dumps(bucket, protocol=5)
    with raw_cache(store_dir) as cache:
        cache.set(A_BUCKET, xxhash.xxh3_64_digest(payload) + payload)


def test_round_trip_upsert_and_delete(workspace: Path, cache_root: Path) -> None:
    records = {r.path: r for r in (record("a.py"), record("pkg/b.py"), record("pkg/c.py"))}
    with ProjectStore(workspace, cache_root) as store:
        assert store.load() == {}
        store.save(records)
        assert store.load() == records
    with ProjectStore(workspace, cache_root) as store:
        assert store.load() == records
        store.save({"pkg/b.py": record("pkg/b.py", 2)}, removed=["pkg/c.py", "never-there.py"])
        assert store.size_bytes() > 0
    with ProjectStore(workspace, cache_root) as store:
        assert store.load() == {"a.py": records["a.py"], "pkg/b.py": record("pkg/b.py", 2)}


def test_outlines_are_kept_apart_under_the_digest_they_were_made_from(
    workspace: Path, cache_root: Path
) -> None:
    a, b = record("a.py"), record("b.py")
    with ProjectStore(workspace, cache_root) as store:
        store.save({"a.py": replace(a, outline=OUTLINE)}, outlines=[("b.py", "feed", OUTLINE)])
        store.save({"b.py": b})
    with ProjectStore(workspace, cache_root) as store:
        assert store.load() == {"a.py": a, "b.py": b}  # records only, never an outline
        assert store.load_outline("a.py", a.digest) == OUTLINE
        assert store.load_outline("a.py", "another digest") is None  # the file changed since
        assert store.load_outline("b.py", "feed") == OUTLINE
        assert store.load_outline("c.py", "feed") is None
        store.save({}, removed=["a.py"])
        assert store.load_outline("a.py", a.digest) is None
        assert store.load() == {"b.py": b}


def test_records_sharing_buckets_are_saved_and_removed_apart(
    workspace: Path, cache_root: Path
) -> None:
    records = {r.path: r for r in (record(f"pkg/m{i}.py", i) for i in range(2_000))}
    with ProjectStore(workspace, cache_root) as store:
        store.save(records)
        removed = [path for i, path in enumerate(records) if i % 3 == 0]
        changed = {path: record(path, 7) for i, path in enumerate(records) if i % 3 == 1}
        store.save(changed, removed=removed)
    expected = {**records, **changed}
    for path in removed:
        del expected[path]
    with ProjectStore(workspace, cache_root) as store:
        assert store.load() == expected
        store.save({}, removed=list(expected))
        assert store.load() == {}


def test_save_rejects_a_record_under_another_path(workspace: Path, cache_root: Path) -> None:
    with ProjectStore(workspace, cache_root) as store, pytest.raises(ValueError):
        store.save({"a.py": record("b.py")})


def test_directory_layout_and_permissions(
    workspace: Path, cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ProjectStore(workspace, cache_root) as store:
        assert store.path == project_store_dir(workspace, cache_root)
        assert store.path.parent == cache_root / "projects"
        assert store.path.name == (
            f"{xxhash.xxh3_64_hexdigest(str(workspace.resolve()).encode())}-v{SCHEMA_VERSION}"
        )
        if os.name == "posix":
            for folder in (cache_root, cache_root / "projects", store.path):
                assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    monkeypatch.setenv("HEADSTART_CACHE_DIR", str(cache_root / "from-env"))
    assert ProjectStore(workspace).path.parent == cache_root / "from-env" / "projects"
    monkeypatch.delenv("HEADSTART_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_root / "xdg"))
    # the platform's folder is settled once a process (cache.user_dirs): an earlier test in
    # this process may have settled it under the real XDG_CACHE_HOME
    headstart_cache_dir.cache_clear()
    try:
        store_dir = ProjectStore(workspace).path
    finally:
        headstart_cache_dir.cache_clear()
    assert store_dir.parent == cache_root / "xdg" / "headstart" / "projects"


def reopened_after(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture, damage: object
) -> tuple[ProjectStore, list[str]]:
    """Save a record, damage the store with `damage(store_dir)`, reopen and load it."""
    with ProjectStore(workspace, cache_root) as store:
        store.save({"a.py": record("a.py")})
        store_dir = store.path
    assert callable(damage)
    damage(store_dir)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cache.store"):
        reopened = ProjectStore(workspace, cache_root)
        assert reopened.load() == {}
    return reopened, discard_warnings(caplog)


def assert_rebuilt(store: ProjectStore) -> None:
    """The rebuilt store works, is private, and is empty until saved again."""
    store.save({"b.py": record("b.py")})
    assert store.load() == {"b.py": record("b.py")}
    if os.name == "posix":
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o700
    store.close()


def test_another_schema_version_is_discarded(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def other_schema(store_dir: Path) -> None:
        with raw_cache(store_dir) as cache:
            cache.set("meta:schema", SCHEMA_VERSION + 1)

    store, warnings = reopened_after(workspace, cache_root, caplog, other_schema)
    assert len(warnings) == 1
    assert f"schema version {SCHEMA_VERSION + 1}, not {SCHEMA_VERSION}" in warnings[0]
    assert str(store.path) in warnings[0]
    assert_rebuilt(store)


def test_another_root_is_discarded(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def other_root(store_dir: Path) -> None:
        with raw_cache(store_dir) as cache:
            cache.set("meta:root", "/somewhere/else")

    store, warnings = reopened_after(workspace, cache_root, caplog, other_root)
    assert len(warnings) == 1
    assert "belongs to '/somewhere/else'" in warnings[0]
    assert_rebuilt(store)


def test_garbage_in_the_sqlite_file_is_discarded(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def garbage(store_dir: Path) -> None:
        database = store_dir / "cache.db"
        size = database.stat().st_size
        with database.open("r+b") as file:
            for offset in range(0, size, 1024):
                file.seek(offset)
                file.write(os.urandom(200))

    store, warnings = reopened_after(workspace, cache_root, caplog, garbage)
    assert len(warnings) == 1
    assert "cannot be read" in warnings[0]
    assert_rebuilt(store)


def test_a_damaged_record_is_detected_by_its_checksum(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def flip_a_byte(store_dir: Path) -> None:
        with raw_cache(store_dir) as cache:
            blob = bytearray(cache.get(A_BUCKET))
            blob[-5] ^= 0xFF
            cache.set(A_BUCKET, bytes(blob))

    store, warnings = reopened_after(workspace, cache_root, caplog, flip_a_byte)
    assert len(warnings) == 1
    assert "fails its checksum" in warnings[0]
    assert_rebuilt(store)


class _Trap:
    """Unpickling this would create a file: the store must never unpickle it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (str(self.marker),))


@pytest.mark.parametrize("form", ["pickled by diskcache", "valid checksum"])
def test_hostile_pickles_are_never_unpickled(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture, tmp_path: Path, form: str
) -> None:
    marker = tmp_path / "unpickled"

    def plant(store_dir: Path) -> None:
        if form == "pickled by diskcache":
            with raw_cache(store_dir) as cache:
                cache.set(A_BUCKET, _Trap(marker))
        else:
            plant_bucket(store_dir, {"a.py": _Trap(marker)})

    store, warnings = reopened_after(workspace, cache_root, caplog, plant)
    assert not marker.exists()
    assert len(warnings) == 1
    assert_rebuilt(store)


@pytest.mark.parametrize(
    "state",
    [
        ("python", 1, 2, "digest", ("a.py",), (("os", ()),), ""),  # a field short
        ("python", 1, 2, "digest", ("a.py",), (("os", ["not", "a tuple"]),), "", ()),
        ("python", "1", 2, "digest", (), (), "", ()),
        ("python", 1, 2, "digest", (), (), "", ((1, 2),)),  # a secret's span short
    ],
)
def test_a_record_unpickling_into_something_else_is_discarded(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture, state: tuple[object, ...]
) -> None:
    store, warnings = reopened_after(
        workspace, cache_root, caplog, lambda store_dir: plant_bucket(store_dir, {"a.py": state})
    )
    assert len(warnings) == 1
    assert "is not a record" in warnings[0]
    assert_rebuilt(store)


def test_a_record_naming_a_class_is_discarded(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Records are plain tuples: even the model's own classes are refused in one."""

    def a_class(store_dir: Path) -> None:
        with raw_cache(store_dir, disk=store_module._EntryDisk) as cache:
            cache.set(A_BUCKET, {"a.py": ("python", 1, 2, "digest", (OUTLINE,), (), "", ())})

    store, warnings = reopened_after(workspace, cache_root, caplog, a_class)
    assert len(warnings) == 1
    assert "is not a record" in warnings[0]
    assert_rebuilt(store)


@pytest.mark.parametrize("damage", ["flipped byte", "hostile pickle", "not an outline"])
def test_a_damaged_outline_is_never_trusted(
    workspace: Path,
    cache_root: Path,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    damage: str,
) -> None:
    marker = tmp_path / "unpickled"
    with ProjectStore(workspace, cache_root) as store:
        store.save({"a.py": replace(record("a.py"), outline=OUTLINE)})
        store_dir = store.path
    with raw_cache(store_dir) as cache:
        blob = bytearray(cache.get("outline:a.py"))
        if damage == "flipped byte":
            blob[-5] ^= 0xFF
        else:
            thing = _Trap(marker) if damage == "hostile pickle" else ("digest", "no outline")
            payload = pickle.dumps(thing)
            blob = bytearray(xxhash.xxh3_64_digest(payload) + payload)
        cache.set("outline:a.py", bytes(blob))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cache.store"):
        store = ProjectStore(workspace, cache_root)
        assert store.load() == {"a.py": record("a.py")}  # records are read without outlines
        assert store.load_outline("a.py", record("a.py").digest) is None
    assert not marker.exists()
    assert len(discard_warnings(caplog)) == 1
    assert_rebuilt(store)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_store_others_could_write_is_discarded(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, warnings = reopened_after(
        workspace, cache_root, caplog, lambda store_dir: os.chmod(store_dir, 0o777)
    )
    assert len(warnings) == 1
    assert "permissions are 0o777" in warnings[0]
    assert_rebuilt(store)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners")
def test_a_store_of_another_user_is_discarded(
    workspace: Path,
    cache_root: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def owned_by_someone_else(store_dir: Path) -> None:
        someone_else = os.getuid() + 1
        monkeypatch.setattr(store_module, "_current_uid", lambda: someone_else)

    store, warnings = reopened_after(workspace, cache_root, caplog, owned_by_someone_else)
    assert len(warnings) == 1
    assert f"owned by uid {os.getuid()}, not by this user (uid {os.getuid() + 1})" in warnings[0]
    assert store.load() == {}
    store.close()


def test_an_unusable_cache_directory_means_no_cache_not_a_crash(
    workspace: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    with caplog.at_level(logging.WARNING, logger="cache.store"):
        store = ProjectStore(workspace, not_a_directory)
        store.save({"a.py": record("a.py")})
        assert store.load() == {}
        assert store.size_bytes() == 0
        store.close()
    assert len(discard_warnings(caplog)) == 1


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from cache.model import FileRecord
    from cache.store import ProjectStore

    workspace, cache_root, name, rounds = sys.argv[1:5]
    store = ProjectStore(Path(workspace), Path(cache_root))
    for round in range(int(rounds)):
        records = {
            f"{name}/{i}.py": FileRecord(f"{name}/{i}.py", "python", i, round, str(round))
            for i in range(20)
        }
        # each round replaces the previous round's extra file
        records[f"{name}/extra{round}.py"] = FileRecord(f"{name}/extra{round}.py", None, 0, 0, "")
        store.save(records, removed=[f"{name}/extra{round - 1}.py"])
        own = {p: r for p, r in store.load().items() if p.startswith(name + "/")}
        versions = {r.digest for p, r in own.items() if "extra" not in p}
        assert versions == {str(round)}, (round, versions)  # a save is never seen half done
        assert [p for p in own if "extra" in p] == [f"{name}/extra{round}.py"]
    store.close()
    """
)


def test_two_processes_writing_at_once(workspace: Path, cache_root: Path, tmp_path: Path) -> None:
    rounds = 150
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(workspace), str(cache_root), name, str(rounds)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("first", "second")
    ]
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr
        assert "Discarding" not in stderr and "busy" not in stderr, stderr
    with ProjectStore(workspace, cache_root) as store:
        records = store.load()
    for name in ("first", "second"):
        own = {p: r for p, r in records.items() if p.startswith(name + "/")}
        assert len(own) == 21
        assert f"{name}/extra{rounds - 1}.py" in own
        assert {r.digest for p, r in own.items() if "extra" not in p} == {str(rounds - 1)}


def test_digest_and_change_detection(tmp_path: Path) -> None:
    data = b"print('hello')\n" * 100_000
    path = tmp_path / "a.py"
    path.write_bytes(data)
    assert digest(data) == xxhash.xxh3_64_hexdigest(data)
    assert len(digest(b"")) == 16
    assert digest_file(path) == digest(data)
    stat_now = FileStat.from_path(path)
    assert stat_now == FileStat(len(data), os.stat(path).st_mtime_ns)
    known = FileRecord("a.py", "python", stat_now.size, stat_now.mtime_ns, digest(data))
    assert not changed(known, stat_now)
    assert changed(known, FileStat(stat_now.size + 1, stat_now.mtime_ns))
    assert changed(known, FileStat(stat_now.size, stat_now.mtime_ns + 1))
    os.utime(path, ns=(0, stat_now.mtime_ns + 1_000_000_000))
    assert changed(known, FileStat.from_path(path))


def test_stores_of_older_schemas_are_removed(
    workspace: Path, cache_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    current = project_store_dir(workspace, cache_root)
    stem = current.name.rpartition("-v")[0]
    older = current.with_name(f"{stem}-v{SCHEMA_VERSION - 1}")
    newer = current.with_name(f"{stem}-v{SCHEMA_VERSION + 1}")
    other_root = current.with_name(f"{'0' * 16}-v{SCHEMA_VERSION - 1}")
    for folder in (older, newer, other_root):
        (folder / "cache.db").parent.mkdir(parents=True, mode=0o700)
        (folder / "cache.db").write_bytes(b"old")
        os.chmod(folder, 0o700)
    with (
        caplog.at_level(logging.WARNING, logger="cache.store"),
        ProjectStore(workspace, cache_root) as store,
    ):
        store.save({"a.py": record("a.py")})
    assert not older.exists()
    assert newer.exists() and other_root.exists()  # a newer server's, another root's
    (warning,) = discard_warnings(caplog)
    assert f"{older} of an older schema (v{SCHEMA_VERSION - 1})" in warning
    assert "indexed again" in warning
