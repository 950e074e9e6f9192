"""The request path: cursor analysis, context, prompts, stops and the suggestion cache."""
