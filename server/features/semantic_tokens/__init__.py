"""Semantic tokens: one classifier per language and the document's encoded tokens."""
