"""The import statements of a file, found by scanning its lines, per language."""

from __future__ import annotations

from textwrap import dedent

import pytest

from server.completion.file_head import import_statements


def statements(source: str, language: str) -> list[str]:
    return import_statements(dedent(source), language)


def test_python_statements_whole_dedented_and_not_inside_strings() -> None:
    source = '''\
        """Module doc.

            import not_this
        """
        from __future__ import annotations
        import os, sys
        from .models import (
            Item,  # a comment (with a paren
            Warehouse,
        )
        from pkg.util import \\
            helper
        try:
            import ujson as json
        except ImportError:
            import json
        if TYPE_CHECKING:
            from pkg.stock import ship
        x = 'import nothing'
        import os, sys
        def f():
            """Example:

            from pkg import nope
            """
    '''
    assert statements(source, "python") == [
        "from __future__ import annotations",
        "import os, sys",
        "from .models import (\n    Item,  # a comment (with a paren\n    Warehouse,\n)",
        "from pkg.util import \\\n    helper",
        "import ujson as json",
        "import json",
        "from pkg.stock import ship",
    ]


def test_typescript_and_javascript_statements() -> None:
    source = """\
        import { a,
          b } from './ab';
        import * as util from "../util"
        import './side-effect';
        import type { T } from './types';
        const fs = require('fs');
        export function importer() { return 1; }
        const x = 1;
    """
    expected = [
        "import { a,\n  b } from './ab'",
        'import * as util from "../util"',
        "import './side-effect'",
        "import type { T } from './types'",
        "const fs = require('fs')",
    ]
    for language in ("typescript", "tsx", "javascript"):
        assert statements(source, language) == expected


def test_go_java_and_rust_statements() -> None:
    go = """\
        package main

        import "fmt"
        import (
        \t"os"
        \tutil "example.com/m/util"
        )

        func main() {}
    """
    assert statements(go, "go") == [
        'import "fmt"',
        'import (\n\t"os"\n\tutil "example.com/m/util"\n)',
    ]
    java = """\
        package a.b;
        import java.util.List;
        import static org.junit.Assert.*;
        class A {}
    """
    assert statements(java, "java") == [
        "import java.util.List;",
        "import static org.junit.Assert.*;",
    ]
    rust = """\
        use std::io;
        pub use crate::repo::{
            Repo,
            Item,
        };
        fn main() {}
    """
    assert statements(rust, "rust") == [
        "use std::io;",
        "pub use crate::repo::{\n    Repo,\n    Item,\n};",
    ]


@pytest.mark.parametrize("language", [None, "ruby", "markdown", "c"])
def test_languages_without_a_scanner_have_none(language: str | None) -> None:
    assert import_statements("import os\nrequire 'x'\n", language) == []


def test_a_statement_cut_off_at_the_end_keeps_what_its_pattern_matches() -> None:
    assert statements("from a import (\n    b,\n", "python") == ["from a import ("]
    assert statements("import os\nimport { a,\n", "typescript") == []
