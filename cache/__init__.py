"""The project cache: what Headstart knows about the workspace's files.

Never imports `server`, pygls or an HTTP client, so it can be used (and tested) alone.
"""
