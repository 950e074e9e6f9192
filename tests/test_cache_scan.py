"""The workspace scan: ignore files at every level, secrets, size and binary limits, pruned
directories, links, and the language of each file (by name, extension or shebang)."""

from __future__ import annotations

import os
import typing
from pathlib import Path, PurePath

import pytest
import tree_sitter_language_pack

from cache.languages import all_languages, from_language_id, language_for
from cache.scan import (
    ScannedFile,
    ScanReport,
    ScanSettings,
    SkipReason,
    check_file,
    scan,
    scan_roots,
)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def scanned(
    root: Path, settings: ScanSettings | None = None, report: ScanReport | None = None
) -> dict[str, ScannedFile]:
    return {file.path: file for file in scan(root, settings or ScanSettings(), report)}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A project with every kind of file the scan must keep or leave out."""
    root = tmp_path / "ws"
    write(
        root,
        {
            "main.py": "print('hi')\n",
            "local.py": "x = 1\n",
            # git: root rules, a negation, an anchored rule, a directory rule
            ".gitignore": "*.json\n!keep.json\n/only_root.py\ngen/\n# comment\n",
            "data.json": "{}",
            "keep.json": "{}",
            "only_root.py": "",
            "gen/made.py": "",
            ".git/info/exclude": "excluded_by_info.py\n",
            ".git/config": "[core]\n",
            "excluded_by_info.py": "",
            # a nested .gitignore applies to its subtree and can re-include
            "sub/.gitignore": "!data.json\nlocal.py\n",
            "sub/data.json": "{}",
            "sub/local.py": "",
            "sub/only_root.py": "",
            "sub/deeper/module.py": "",
            "sub/deeper/local.py": "",
            # .headstartignore at two levels; git's negation cannot undo it
            ".headstartignore": "private/\nhidden_by_hs.py\n",
            "private/notes.py": "",
            "sub/hs_nested.py": "",
            "sub/.headstartignore": "hs_nested.py\n",
            "sub/deeper/.gitignore": "!hidden_by_hs.py\n",
            "sub/deeper/hidden_by_hs.py": "",
            # the exclude setting (used by some tests)
            "component.gen.ts": "",
            "tools/script.py": "",
            # secrets
            ".env": "KEY=1",
            ".env.local": "KEY=1",
            "server.pem": "-----BEGIN",
            "deploy.key": "k",
            "id_rsa": "k",
            "id_ed25519.pub": "k",
            "credentials.json": "{}",
            "app/my_secret.py": "TOKEN = 'x'",
            "Client_SECRET.yaml": "a: 1",
            ".npmrc": "//registry:_authToken=x",
            ".netrc": "machine x",
            "secrets/config.py": "",
            # generated, binary, unknown, too large
            "app.min.js": "x",
            "yarn.lock": "x",
            "package-lock.json": "{}",
            "bundle.js.map": "{}",
            "blob.py": b"abc\x00def",
            "photo.xyz": "x",
            "big.py": "#" * 5000,
            # pruned directories
            "node_modules/pkg/index.js": "",
            "__pycache__/main.cpython-311.pyc": b"\x00",
            "dist/out.js": "",
            "build/out.py": "",
            "target/out.rs": "",
            ".venv/lib/site.py": "",
            ".vscode/settings.json": "{}",
            "myenv/pyvenv.cfg": "home = /usr/bin",
            "myenv/lib/site.py": "",
            # languages by name and shebang
            "Makefile": "all:\n",
            "Dockerfile": "FROM x\n",
            "tool": "#!/usr/bin/env python3\nprint()\n",
            "run": "#!/bin/bash\necho\n",
            "README": "no shebang here\n",
            "web/App.tsx": "",
            "web/util.ts": "",
            "lib/Main.java": "",
            "lib/main.go": "",
            "lib/lib.rs": "",
            "lib/Prog.cs": "",
            "empty/__init__.py": "",
        },
    )
    return root


def test_keeps_source_files_and_leaves_out_everything_else(workspace: Path) -> None:
    report = ScanReport()
    files = scanned(workspace, ScanSettings(max_file_bytes=1000), report)
    assert sorted(files) == [
        "Dockerfile",
        "Makefile",
        "component.gen.ts",
        "empty/__init__.py",
        "keep.json",
        "lib/Main.java",
        "lib/Prog.cs",
        "lib/lib.rs",
        "lib/main.go",
        "local.py",
        "main.py",
        "run",
        "sub/data.json",
        "sub/deeper/module.py",
        "sub/only_root.py",
        "tool",
        "tools/script.py",
        "web/App.tsx",
        "web/util.ts",
    ]
    assert report.files == len(files)
    assert (
        report.skipped["ignored"] == 5
    )  # data.json, only_root.py, excluded_by_info.py, 2 local.py
    assert report.skipped["headstartignore"] == 2  # sub/hs_nested.py, sub/deeper/hidden_by_hs.py
    assert report.skipped["secret"] == 11
    assert report.skipped["generated"] == 4
    assert report.skipped["binary"] == 1
    assert report.skipped["too_large"] == 1
    assert report.skipped["unknown_language"] >= 2  # photo.xyz, README, the ignore files
    assert report.skipped_dirs["ignored"] == 1  # gen/
    assert report.skipped_dirs["headstartignore"] == 1  # private/
    assert report.skipped_dirs["secret"] == 1  # secrets/
    assert report.skipped_dirs["virtualenv"] == 1  # myenv/
    assert report.skipped_dirs["skipped_dir"] == 8  # .git node_modules ... .vscode
    assert report.summary().startswith(f"{len(files)} files; skipped ")


def test_scanned_file_fields(workspace: Path) -> None:
    files = scanned(workspace)
    module = files["sub/deeper/module.py"]
    info = os.stat(workspace / "sub" / "deeper" / "module.py")
    assert module.root == workspace
    assert module.abs_path == workspace / "sub" / "deeper" / "module.py"
    assert (module.size, module.mtime_ns) == (info.st_size, info.st_mtime_ns)
    languages = {path: file.language for path, file in files.items()}
    assert languages["tool"] == "python"
    assert languages["run"] == "bash"
    assert languages["Makefile"] == "make"
    assert languages["Dockerfile"] == "dockerfile"
    assert languages["web/App.tsx"] == "tsx"
    assert languages["web/util.ts"] == "typescript"
    assert languages["lib/Prog.cs"] == "csharp"
    assert languages["keep.json"] == "json"
    assert languages["empty/__init__.py"] == "python"


def test_exclude_setting_uses_gitignore_syntax(workspace: Path) -> None:
    report = ScanReport()
    files = scanned(workspace, ScanSettings(exclude=("*.gen.ts", "/tools/", "lib/*.go")), report)
    assert "component.gen.ts" not in files
    assert "tools/script.py" not in files
    assert "lib/main.go" not in files
    assert "lib/lib.rs" in files
    assert report.skipped["excluded"] == 2
    assert report.skipped_dirs["excluded"] == 1


def test_a_repository_nested_in_the_workspace_has_its_own_rules(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "*.py\n",
            "top.py": "",
            "vendor/lib/.git/info/exclude": "skip.ts\n",
            "vendor/lib/code.py": "",
            "vendor/lib/skip.ts": "",
            "vendor/lib/keep.ts": "",
        },
    )
    assert sorted(scanned(tmp_path)) == ["vendor/lib/code.py", "vendor/lib/keep.ts"]


def test_symlinks_are_not_followed_by_default(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    root = tmp_path / "ws"
    write(outside, {"evil.py": "", "pkg/leak.py": ""})
    write(root, {"main.py": "", "pkg/mod.py": ""})
    (root / "outside_file.py").symlink_to(outside / "evil.py")
    (root / "outside_dir").symlink_to(outside / "pkg", target_is_directory=True)
    (root / "alias.py").symlink_to(root / "main.py")
    report = ScanReport()
    assert sorted(scanned(root, ScanSettings(), report)) == ["main.py", "pkg/mod.py"]
    assert report.skipped["symlink"] == 3


def test_followed_symlinks_never_leave_the_root_or_loop(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    root = tmp_path / "ws"
    write(outside, {"evil.py": "", "pkg/leak.py": ""})
    write(root, {"main.py": "", "pkg/mod.py": ""})
    (root / "outside_file.py").symlink_to(outside / "evil.py")
    (root / "outside_dir").symlink_to(outside / "pkg", target_is_directory=True)
    (root / "relative_escape.py").symlink_to(Path("..") / "outside" / "evil.py")
    (root / "alias.py").symlink_to(root / "main.py")
    (root / "pkg" / "loop").symlink_to(root, target_is_directory=True)
    (root / "pkg_alias").symlink_to(root / "pkg", target_is_directory=True)
    report = ScanReport()
    files = scanned(root, ScanSettings(follow_symlinks=True), report)
    assert sorted(files) == ["alias.py", "main.py", "pkg/mod.py"]
    assert report.skipped["outside_root"] == 3
    assert report.skipped_dirs["symlink"] == 2  # pkg/loop and pkg_alias: already walked


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    report = ScanReport()
    assert scanned(tmp_path, ScanSettings(), report) == {}
    assert report.skipped["not_regular"] == 1


def test_files_and_directories_vanishing_mid_scan_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "", "b.py": "", "c.py": "", "later/d.py": ""})
    report = ScanReport()
    walk = scan(tmp_path, ScanSettings(), report)
    assert next(walk).path == "a.py"
    (tmp_path / "c.py").unlink()
    (tmp_path / "later" / "d.py").unlink()
    (tmp_path / "later").rmdir()
    assert [file.path for file in walk] == ["b.py"]
    assert report.skipped["unreadable"] == 1
    assert report.skipped_dirs["unreadable"] == 1


def test_unlistable_directories_and_missing_roots_do_not_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"a.py": "", "locked/b.py": ""})
    real_scandir = os.scandir

    def scandir(path: str) -> typing.Any:
        if path.endswith("locked"):
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = ScanReport()
    assert sorted(scanned(tmp_path, ScanSettings(), report)) == ["a.py"]
    assert report.skipped_dirs["unreadable"] == 1
    assert list(scan(tmp_path / "missing")) == []


def test_nested_workspace_folders_are_scanned_once(tmp_path: Path) -> None:
    write(tmp_path, {"outer.py": "", "inner/inner.py": "", "inner/pkg/mod.py": ""})
    files = list(scan_roots([tmp_path, tmp_path / "inner", tmp_path]))
    assert sorted((file.root.name, file.path) for file in files) == [
        ("inner", "inner.py"),
        ("inner", "pkg/mod.py"),
        (tmp_path.name, "outer.py"),
    ]


def test_large_ignore_file_prefilter_agrees_with_pathspec(tmp_path: Path) -> None:
    rules = ["*.pyc", "/build_*/", "docs/**/gen", "!docs/keep/gen", "a?c[xy].py", "\\#hash.py"]
    write(
        tmp_path,
        {
            ".gitignore": "\n".join(rules) + "\n",
            "x.pyc.py": "",
            "build_a/m.py": "",
            "sub/build_a/m.py": "",
            "docs/a/b/gen/m.py": "",
            "docs/keep/gen/m.py": "",
            "abcx.py": "",
            "abcz.py": "",
            "#hash.py": "",
        },
    )
    assert sorted(scanned(tmp_path)) == [
        "abcz.py",
        "docs/keep/gen/m.py",
        "sub/build_a/m.py",
        "x.pyc.py",
    ]


@pytest.mark.parametrize(
    ("name", "first_line", "language"),
    [
        ("a.py", b"", "python"),
        ("stubs.pyi", b"", "python"),
        ("App.jsx", b"", "javascript"),
        ("App.tsx", b"", "tsx"),
        ("types.d.ts", b"", "typescript"),
        ("Main.KT", b"", "kotlin"),
        ("prog.cs", b"", "csharp"),
        ("x.hpp", b"", "cpp"),
        ("x.h", b"", "c"),
        ("style.scss", b"", "scss"),
        ("conf.yml", b"", "yaml"),
        ("Cargo.toml", b"", "toml"),
        ("CMakeLists.txt", b"", "cmake"),
        ("Dockerfile.prod", b"", "dockerfile"),
        ("requirements-dev.txt", b"", "requirements"),
        ("go.mod", b"", "gomod"),
        (".bashrc", b"", "bash"),
        ("notes.txt", b"", None),
        ("LICENSE", b"Copyright", None),
        ("script", b"#!/usr/bin/env python3", "python"),
        ("script", b"#!/usr/bin/python3.11 -u", "python"),
        ("script", b"#!/usr/bin/env -S node --no-warnings", "javascript"),
        ("script", b"#! /bin/sh", "bash"),
        ("script", b"#!/usr/bin/env ruby", "ruby"),
        ("script", b"#!/usr/bin/env", None),
        ("script", b"#!/opt/unknown-tool", None),
        ("a.py", b"#!/bin/bash", "python"),  # the extension wins
    ],
)
def test_language_for(name: str, first_line: bytes, language: str | None) -> None:
    assert language_for(PurePath(name), first_line) == language


@pytest.mark.parametrize(
    ("language_id", "language"),
    [
        ("python", "python"),
        ("typescriptreact", "tsx"),
        ("javascriptreact", "javascript"),
        ("shellscript", "bash"),
        ("csharp", "csharp"),
        ("c_sharp", "csharp"),
        ("objective-c", "objc"),
        ("jsonc", "json"),
        ("makefile", "make"),
        ("Go", "go"),
        ("plaintext", None),
        ("bat", None),
        ("", None),
    ],
)
def test_from_language_id(language_id: str, language: str | None) -> None:
    assert from_language_id(language_id) == language


def test_every_language_is_a_grammar_of_the_pack() -> None:
    grammars = set(typing.get_args(tree_sitter_language_pack.SupportedLanguage))
    assert all_languages() <= grammars


def test_a_malformed_gitignore_pattern_is_skipped_not_fatal(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("/\ndrop.py\n")
    (tmp_path / "keep.py").write_text("x = 1\n")
    (tmp_path / "drop.py").write_text("y = 2\n")
    assert [f.path for f in scan(tmp_path)] == ["keep.py"]


@pytest.mark.parametrize(
    "settings",
    [ScanSettings(max_file_bytes=1000), ScanSettings(exclude=("*.gen.ts", "/tools/", "lib/*.go"))],
)
def test_check_file_agrees_with_the_walk_on_every_file(
    workspace: Path, settings: ScanSettings
) -> None:
    """One file at a time (what the editor's events need), the same verdicts as the walk:
    every file the walk keeps, with the same fields, and none it leaves out."""
    (workspace / "sub" / "link.py").symlink_to(workspace / "main.py")
    kept = scanned(workspace, settings)
    every_file = [
        PurePath(os.path.relpath(os.path.join(folder, name), workspace)).as_posix()
        for folder, _, names in os.walk(workspace)
        for name in names
    ]
    assert len(every_file) > len(kept) > 10
    for path in every_file:
        verdict = check_file(workspace, path, settings)
        if path in kept:
            assert verdict == kept[path], path
        else:
            assert isinstance(verdict, SkipReason), path


def test_check_file_of_an_unsaved_buffer(workspace: Path) -> None:
    settings = ScanSettings(max_file_bytes=1000)
    checked = check_file(workspace, "main.py", settings, b"print('edited')\n")
    assert isinstance(checked, ScannedFile) and checked.size == len(b"print('edited')\n")
    assert check_file(workspace, "new_file.py", settings, b"x = 1\n") == ScannedFile(
        workspace, "new_file.py", 6, 0, "python"
    )  # not on disk yet
    assert check_file(workspace, "new_file.py", settings) == SkipReason.UNREADABLE
    assert check_file(workspace, "main.py", settings, b"x" * 1001) == SkipReason.TOO_LARGE
    assert check_file(workspace, "main.py", settings, b"\0\1\2") == SkipReason.BINARY
    assert check_file(workspace, "tool", settings, b"#!/bin/sh\necho\n") == ScannedFile(
        workspace, "tool", 15, (workspace / "tool").stat().st_mtime_ns, "bash"
    )
    for bad in ("../outside.py", "/etc/passwd", "a/../main.py", "./main.py", "", "sub\\x.py"):
        assert check_file(workspace, bad, settings, b"x = 1\n") == SkipReason.OUTSIDE_ROOT
    assert check_file(workspace, "gen/new.py", settings, b"x = 1\n") == SkipReason.IGNORED
    assert check_file(workspace, "myenv/new.py", settings, b"x = 1\n") == SkipReason.VIRTUALENV
