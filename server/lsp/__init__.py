"""The only code that knows LSP: pygls handlers, the protocol, logging to the editor."""
