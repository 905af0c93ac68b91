"""Tests of the channels: the OpenAI, Vercel AI SDK UI and AG-UI faces of the copilot turn."""
