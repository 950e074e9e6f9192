"""Code from API contracts: an OpenAPI 3.x document in, a typed client per language out.

`headstart aiapi generate` loads and validates the document (errors carry the YAML line),
generates a Python, TypeScript and Go client with well-kept generators where they exist
and small templates where none fits, and runs each language's own checker over the
result. A layer of its own: it imports nothing from server.lsp (docs/aiapi.md).
"""
