"""The suite's one way to reach a server: HTTP exchanges with evidence, and the one SSE tokenizer."""
