"""The context of one completion: which code from other files goes into the prompt.

The package's public interface: the names code outside it imports."""

from server.completion.context.definitions import CLASS_KINDS
from server.completion.context.model import Budget, Context, Snippet, estimate_tokens
from server.completion.context.near_duplicates import DUPLICATE_JACCARD, jaccard, leaf_tokens
from server.completion.context.packing import build_context, default_overhead
from server.completion.context.resolution import ContextBuilder
from server.completion.context.trimming import fit_prefix, fit_suffix

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
    "fit_suffix",
    "jaccard",
    "leaf_tokens",
]
