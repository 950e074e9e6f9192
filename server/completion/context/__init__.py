"""The context of one completion: which code from other files goes into the prompt.

For a document and a cursor (`server.completion.cursor.analyse`), the builder

1. **resolves** the names referenced near the cursor to definitions in other project
   files, through the file's imports as written (aliases, relative imports, `module.attr`
   chains, `__init__` re-exports followed to the defining file, `Class.member` chains) and
   through the local types (`x = Warehouse()`, `repo: Repo`, `self.repo = Repo()`,
   `make().save` through a function's return annotation);
2. adds **related files** — direct dependencies, then `ProjectIndex.related` (same
   package, second hops, importers) — as outlines;
3. **ranks** every candidate snippet by how directly it answers a name (the object before
   the dot being completed first, then the name being typed and the function being
   called, then the current statement, then the lines above), then by graph distance
   (direct dependency > two hops > same directory > importer), then by recency;
4. adds **similar code** (`server.completion.similar`): the 12-line chunks of related files (the
   same files, plus those that import the same project modules) that read most like the
   last lines above the cursor by BM25 — call sites showing how the APIs being called
   are called — as candidates that compete only with each other, for a share of their
   own (`Budget.similar_share`, 0 turns them off);
5. **fits** the budget greedily by score, skipping near-duplicates (Jaccard >= 0.85 of the
   sets of tree-sitter leaf tokens) and snippets already visible in the current file's
   window (and chunks that a chosen snippet of their file already shows), then renders
   the chosen ones in a **stable order** (below), and trims the prefix from the top and
   the suffix from the bottom at line boundaries.

Snippets: a definition as its source when short (<= SHORT_LINES lines), otherwise its
signature and docstring (a class: header, docstring and member signatures); a related
file as its outline (or whole, when short). Rendered texts are cached per file digest, so a
keystroke's build re-renders nothing that did not change.

Render order (for vLLM's prefix cache): file outlines first, then definitions, then
similar code (it follows the lines being typed, so it changes most); within each, by
path, then line. The order depends only on which snippets were chosen, never on
their scores, so consecutive keystrokes that choose the same set render the same bytes;
file outlines depend only on the active file, so they change least and come first, and the
definitions that answer the names at the cursor sit nearest to the current file, where the
model attends most. The prefix's first line moves in steps of `Budget.prefix_step_lines`
lines, so typing at the end of a long prefix does not shift its start on every keystroke.
The chosen set is kept steady too: what was chosen for a file stays a (low-scored)
candidate for STICKY_BUILDS builds while the cursor stays in the same function, so a
half-typed word or a just-finished statement does not swap snippets in and out; words typed
in comments and strings are not names; a bare word being typed never pulls in a whole
module. Similar-code chunks are kept the same way, their search memoised by the query
terms the chunks know (a half-typed word changes nothing), a chosen chunk winning
near-ties and fading out when no longer found. On /tmp/bigws this keeps the shared prompt
prefix between keystrokes at 90-93%. With `Budget.keep_snippets` the whole chosen set is
shown again over a stay in the document, until the cursor's statement needs a definition
it lacks (`keeping`).

State: the builder is per workspace and keeps per-file caches (outlines arranged for
lookups, rendered snippets, token sets, similar-code chunk indexes, all keyed by file
digest) and the per-file memory above (`forget` drops it), and where each name a file
imports is defined (it depends on the import, not on the cursor). `prepare(path)` does
ahead of a file's first keystroke what its builds would otherwise wait for: outlines are
made on first use, so it resolves the names the file imports and the dotted names that
start with one, walks the base classes they lead to, renders related files and
definitions, chunks the files similar code is looked for in, and indexes which lines use
which imported name; the server calls it where it activates the cache queue. Only answers
that do not depend on the cursor are kept from it, so a build chooses what it would
without it.

The budget counts with the `count` it is given (the model's tokenizer in the server; the
chars/4 `estimate_tokens` by default) and includes each snippet's rendering overhead
(`overhead(path)`: the template's file marker and path). `Context.tokens` is the sum
that never exceeds `Budget.total - Budget.reserved`; the template's fixed parts (repo
header, FIM markers) are the caller's `reserved`.

The modules, from the bottom up: `model` (the values: Budget, Snippet, Context, Target),
`lru`, `definitions` (a file's outline for lookups, what signatures say), `module_files`,
`rendering`, `near_duplicates`, `trimming`, `packing` (`build_context`), `imported_names`;
then the builder's parts: `files`, `resolution`, `candidates`, `similar_chunks`, `memory`,
`keeping` (the set kept over a stay in a document, `Budget.keep_snippets`); and `builder`
(`ContextBuilder`). Below are the names code outside the package imports.
"""

from server.completion.context.builder import ContextBuilder
from server.completion.context.definitions import CLASS_KINDS
from server.completion.context.model import Budget, Context, Snippet, estimate_tokens
from server.completion.context.near_duplicates import DUPLICATE_JACCARD, jaccard, leaf_tokens
from server.completion.context.packing import build_context, default_overhead
from server.completion.context.trimming import fit_prefix, fit_prefix_kept, fit_suffix

__all__ = [
    "CLASS_KINDS",
    "DUPLICATE_JACCARD",
    "Budget",
    "Context",
    "ContextBuilder",
    "Snippet",
    "build_context",
    "default_overhead",
    "estimate_tokens",
    "fit_prefix",
    "fit_prefix_kept",
    "fit_suffix",
    "jaccard",
    "leaf_tokens",
]
