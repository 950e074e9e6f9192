"""The workspace as the server keeps it: each root's project cache, kept in step with the editor."""
