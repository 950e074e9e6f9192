"""The model: the streaming client, the resume protocol and the local vLLM's processes."""
