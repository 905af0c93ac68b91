"""The channels: the copilot's turn over other protocols (spec/behaviour.md, "Channels").

turns.py is the one core every channel (and `POST {prefix}/stream`) starts its turn with; each protocol module
only translates a request into a TurnRequest and the turn's contract events into its own wire format.
"""
