"""Which model-written parts each language's output gets, for every caller of `--with-model`:
the CLI, the job service's worker and the editor's generate actions run the same writers
over the same folder layout (OUT/<language>/), so each says the same thing about a piece."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from server.aiapi.document import ContractDocument
from server.aiapi.model_go import write_go_parts
from server.aiapi.model_parts import ModelOptions, ModelReport
from server.aiapi.model_python import write_python_parts
from server.aiapi.model_typescript import write_typescript_parts


def write_model_parts(
    document: ContractDocument,
    out: Path,
    languages: Iterable[str],
    options: ModelOptions,
    progress: Callable[[str], None] | None = None,
) -> list[ModelReport]:
    """The model's pieces over what the generators wrote under `out`, one report per
    language, in the order given."""
    writers = {
        "python": write_python_parts,
        "typescript": write_typescript_parts,
        "go": write_go_parts,
    }
    return [
        writers[language](document, out, options, progress)
        for language in languages
        if language in writers
    ]
