"""Editor features beside completion: refactor code actions, semantic tokens, hovers."""
