"""The suite's side of the channels (OpenAI, UI message stream, AG-UI): how it reaches each protocol over HTTP, reads
its SSE body strictly, knows what a scripted turn must show, and runs the protocol's real client over the recorded
body. The checks that use them are in conformance/checks/channel_*.py and conformance/checks/channels.py.

    sse.py           the SSE body, frame by frame, with arrival times and line endings (no leniency)
    endpoints.py     each streaming endpoint: its request, and what its answer says (text, usage, session, error)
    client.py        ChannelClient: one check's requests to a channel, kept as evidence
    expected.py      what a fake-LLM script makes a turn show (text per generation, tool calls, failure)
    official.py      the official JSON Schemas of spec/channels/official, one validator per message type
    real_clients.py  the `openai` client's stream state, `ai`'s readUIMessageStream and @ag-ui/client, over a body
    rules_*.py       each protocol's ordering and content rules, as Violations with the requirement they break
"""
