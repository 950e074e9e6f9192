"""Import resolution per language and the dependency graph, on small fixture projects
described by their files' outlines (the outlines themselves are tested elsewhere)."""

from __future__ import annotations

from cache.graph import DependencyGraph
from cache.imports import ImportResolver, import_facts
from cache.model import Definition, FileRecord, ImportRef, Outline


def resolver(
    outlines: dict[str, Outline | None], configs: dict[str, str] | None = None
) -> ImportResolver:
    records = {}
    for path, outline in outlines.items():
        language = outline.language if outline is not None else None
        records[path] = FileRecord(
            path, language, 0, 0, "", None, (), *import_facts(language, outline)
        )
    for name in configs or {}:
        records.setdefault(name, FileRecord(name, "json", 0, 0, ""))
    return ImportResolver(records, lambda name: (configs or {}).get(name))


def py(*imports: ImportRef) -> Outline:
    return Outline("python", (), imports)


def test_python_absolute_relative_packages_and_src_layout() -> None:
    r = resolver(
        {
            "src/shop/__init__.py": py(ImportRef("shop.models", ("Item",))),
            "src/shop/models.py": py(),
            "src/shop/pricing.py": py(ImportRef(".models", ("Item",)), ImportRef("os")),
            "src/shop/sub/__init__.py": py(),
            "src/shop/sub/tax.py": py(ImportRef("..pricing"), ImportRef("..", ("models",))),
            "src/shop/sub/rates.py": py(ImportRef(".", ("tax",))),
            "app.py": py(ImportRef("shop", ("Item",)), ImportRef("shop.sub.tax")),
            "tests/test_x.py": py(ImportRef("shop.pricing"), ImportRef("json")),
        }
    )
    assert r.resolve("src/shop/pricing.py") == ("src/shop/models.py",)
    assert r.resolve("src/shop/sub/tax.py") == (
        "src/shop/__init__.py",
        "src/shop/models.py",
        "src/shop/pricing.py",
    )
    assert r.resolve("src/shop/sub/rates.py") == (
        "src/shop/sub/__init__.py",
        "src/shop/sub/tax.py",
    )
    # `from shop import Item` follows the __init__ re-export to the defining module
    assert r.resolve("app.py") == (
        "src/shop/__init__.py",
        "src/shop/models.py",
        "src/shop/sub/tax.py",
    )
    assert r.resolve("tests/test_x.py") == ("src/shop/pricing.py",)


def test_python_nested_project_root_is_a_source_root() -> None:
    r = resolver(
        {
            "examples/demo/inventory/__init__.py": py(),
            "examples/demo/inventory/models.py": py(),
            "examples/demo/main.py": py(ImportRef("inventory.models", ("Item",))),
        }
    )
    assert r.resolve("examples/demo/main.py") == ("examples/demo/inventory/models.py",)


def test_typescript_relative_index_files_and_tsconfig_paths() -> None:
    ts = lambda *mods: Outline("typescript", (), tuple(ImportRef(m) for m in mods))  # noqa: E731
    configs = {
        "tsconfig.json": """{
          // comments and trailing commas are allowed here
          "compilerOptions": {"baseUrl": "src", "paths": {"@lib/*": ["lib/*"],}},
        }"""
    }
    r = resolver(
        {
            "src/app.ts": ts("./util", "./components", "@lib/strings", "react", "./missing"),
            "src/util.ts": ts(),
            "src/components/index.tsx": ts("../util.js"),
            "src/lib/strings.ts": ts(),
        },
        configs,
    )
    assert r.resolve("src/app.ts") == (
        "src/components/index.tsx",
        "src/lib/strings.ts",
        "src/util.ts",
    )
    assert r.resolve("src/components/index.tsx") == ("src/util.ts",)


def test_go_imports_resolve_to_the_package_directory_under_the_module_path() -> None:
    go = lambda *mods: Outline("go", (), tuple(ImportRef(m) for m in mods))  # noqa: E731
    r = resolver(
        {
            "cmd/app/main.go": go("fmt", "example.com/shop/internal/store"),
            "internal/store/store.go": go(),
            "internal/store/cache.go": go(),
            "internal/store/store_test.go": go(),
        },
        {"go.mod": "module example.com/shop\n\ngo 1.22\n"},
    )
    assert r.resolve("cmd/app/main.go") == (
        "internal/store/cache.go",
        "internal/store/store.go",
    )


def test_java_imports_resolve_by_package_declaration() -> None:
    def java(package: str, *imports: ImportRef) -> Outline:
        return Outline("java", (Definition("package", package, package, "", None, 0, 0),), imports)

    r = resolver(
        {
            "src/main/java/com/shop/App.java": java(
                "com.shop",
                ImportRef("com.shop.model.Item"),
                ImportRef("com.shop.util", ("*",)),
                ImportRef("java.util.List"),
            ),
            "src/main/java/com/shop/model/Item.java": java("com.shop.model"),
            "src/main/java/com/shop/util/Strings.java": java("com.shop.util"),
            "src/main/java/com/shop/util/Numbers.java": java("com.shop.util"),
        }
    )
    assert r.resolve("src/main/java/com/shop/App.java") == (
        "src/main/java/com/shop/model/Item.java",
        "src/main/java/com/shop/util/Numbers.java",
        "src/main/java/com/shop/util/Strings.java",
    )


def test_rust_mod_declarations_and_crate_super_paths() -> None:
    def rust(*items: Definition | ImportRef) -> Outline:
        return Outline(
            "rust",
            tuple(i for i in items if isinstance(i, Definition)),
            tuple(i for i in items if isinstance(i, ImportRef)),
        )

    def mod(name: str) -> Definition:
        return Definition("module", name, name, f"mod {name};", None, 0, 0)

    r = resolver(
        {
            "src/lib.rs": rust(mod("model"), mod("net"), ImportRef("std::fmt")),
            "src/model.rs": rust(ImportRef("crate::net::client", ("Client",))),
            "src/net/mod.rs": rust(mod("client")),
            "src/net/client.rs": rust(ImportRef("super", ("server",)), ImportRef("crate::model")),
            "src/net/server.rs": rust(),
        }
    )
    assert r.resolve("src/lib.rs") == ("src/model.rs", "src/net/mod.rs")
    assert r.resolve("src/model.rs") == ("src/net/client.rs",)
    assert r.resolve("src/net/mod.rs") == ("src/net/client.rs",)
    assert r.resolve("src/net/client.rs") == ("src/model.rs", "src/net/server.rs")


def test_graph_keeps_reverse_edges_and_answers_n_hop_queries() -> None:
    graph = DependencyGraph()
    graph.set_imports("a", ["b", "c"])
    graph.set_imports("b", ["d"])
    graph.set_imports("d", ["e"])
    assert graph.neighbourhood("a", hops=1) == {"b": 1, "c": 1}
    assert graph.neighbourhood("a", hops=2) == {"b": 1, "c": 1, "d": 2}
    assert graph.neighbourhood("e", hops=3, reverse=True) == {"d": 1, "b": 2, "a": 3}
    graph.set_imports("a", ["c"])  # an edit drops an import
    assert graph.imported_by("b") == frozenset()
    graph.remove("d")
    assert graph.imported_by("e") == frozenset()
    assert graph.edge_count == 2
