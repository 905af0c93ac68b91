"""The turn core every protocol uses as a peer: a turn started once (session, ownership, busy lock, statistics; the
contract's events) in core.py, and its events written as a streamed response in sse.py. The GNS3 stream (chat/)
and each channel (channels/) turn these events into their own wire format; they never import each other."""
