"""Headstart's language server: editor events in, completions out."""

__version__ = "0.1.0"
