"""The turn core every protocol uses as a peer: a turn started once (LLM configuration, session, ownership, busy
lock; the contract's events; the outcome its end reports) in core.py, and its events written as a streamed response
in sse.py. The GNS3 stream (chat/) and each channel (channels/) turn these events into their own wire format; they
never import each other. The checks before a turn (caller, project, input) are the route prelude (prelude.py)."""
