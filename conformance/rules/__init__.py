"""Pure rules: judgements of an answer or a stream that do no I/O (no request, no process, no clock), each naming the
requirement it verifies: the GNS3 stream's framing and events, the contract's response bodies, and each channel
protocol's rules (OpenAI, the AI SDK UI message stream, AG-UI) with their official schemas. tests/test_layering.py
keeps them pure: a rule never imports the harness, the transport's HTTP side, the checks or a front-end."""
