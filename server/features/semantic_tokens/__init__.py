"""Semantic tokens: one classifier per language and the document's encoded tokens.

- `document`: the dispatch by language, and each open document's last result;
- `python`, `typescript`, `go`, `rust`, `java`: one classifier per language, all but
  `python` on the shared `walker`;
- `model`: the tokens and the project's answer about imported names, shared by all;
- `project`: that answer, from the project cache;
- `legend`: the legend each client is sent;
- `encoding`: LSP's integer form, and the delta between two results.
"""
