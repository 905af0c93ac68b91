"""The channels: the copilot's turn over other protocols (spec/behaviour.md, "Channels").

One module per protocol (openai_chat, openai_responses, ui_stream, ag_ui; openai_common is what the two OpenAI
protocols share, ui_messages the UI channel's history), each a peer of the GNS3 stream (chat/) over the turn core
(reference_server/turns/): it only translates a request into a TurnRequest and the turn's contract events into its
own wire format. No protocol module imports another.
"""
