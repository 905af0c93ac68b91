"""The HTTP fake LLM: real clients accept it, and it is equivalent to the in-process model (FAKELLM-005)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai.lib.streaming.chat import ChatCompletionStreamState

from fake_llm.chat_model import FakeScriptedChatModel
from fake_llm.errors import ScriptedFailure
from fake_llm.scripts import ScriptLibrary
from fake_llm.selection import tag_for
from tests.readme import readme_command


@tool
def get_topology(detail: str) -> str:
    """Read the project topology."""
    return "{}"


@tool
def run_show_command(device: str, command: str) -> str:
    """Run a show command on a device."""
    return ""


TOOLS = [get_topology, run_show_command]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A real fake-LLM server process on a free loopback port; stopped by its pid."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_llm", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = process.stdout.readline()
    assert "listening on" in line, line + process.stderr.read()
    base = line.split()[3]
    for _ in range(100):
        try:
            httpx.get(base + "/models", timeout=1).raise_for_status()
            break
        except httpx.HTTPError:
            time.sleep(0.05)
    print(f"\nfake LLM server ready in {time.perf_counter() - started:.2f} s")
    yield base
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()


def test_the_server_listens_before_it_says_where():
    """A client that connects as soon as it reads the line (the suite's preflight, a server it started) is queued by
    the kernel, never refused while uvicorn starts: with the process stopped right after the line, a connection is
    still accepted."""
    process = subprocess.Popen([sys.executable, "-m", "fake_llm", "serve", "--port", "0"], stdout=subprocess.PIPE)
    try:
        line = process.stdout.readline().decode()
        os.kill(process.pid, signal.SIGSTOP)  # nothing after the line runs until SIGCONT
        url = httpx.URL(line.split()[3])
        with socket.create_connection((url.host, url.port), timeout=5):
            pass
    finally:
        os.kill(process.pid, signal.SIGCONT)
        process.terminate()
        process.wait(timeout=10)


def control(base: str) -> str:
    return base.removesuffix("/v1")


def chat_openai(base: str, **kwargs) -> ChatOpenAI:
    return ChatOpenAI(base_url=base, api_key="sk-test", model="fake-model", streaming=True, max_retries=0, **kwargs)


def assemble(message: AIMessage) -> tuple:
    usage = message.usage_metadata or {}
    calls = [(c["id"], c["name"], c["args"]) for c in message.tool_calls]
    return message.content, calls, (usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_tokens"))


CONVERSATIONS = {
    "plain": [HumanMessage(f"check {tag_for('plain', 'eq')}")],
    "tool-call": [HumanMessage(tag_for("tool-round-trip", "eq"))],
    "after-tool": [
        HumanMessage(tag_for("tool-round-trip", "eq")),
        AIMessage("", tool_calls=[{"id": "call_rt_1", "name": "get_topology", "args": {"detail": "summary"}}]),
        ToolMessage("{}", tool_call_id="call_rt_1"),
    ],
    "parallel": [HumanMessage(tag_for("parallel-tools", "eq"))],
}


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_in_process_and_http_assemble_the_same_message(server: str, name: str):
    messages = CONVERSATIONS[name]
    local = FakeScriptedChatModel().bind_tools(TOOLS).invoke(messages)
    remote = chat_openai(server).bind_tools(TOOLS).invoke(messages)
    assert assemble(local) == assemble(remote)
    assert assemble(local)[2][0] is not None


def test_title_request_is_equivalent(server: str):
    messages = [HumanMessage(tag_for("plain", "t")), AIMessage("answer")]
    assert assemble(FakeScriptedChatModel().invoke(messages)) == assemble(chat_openai(server).invoke(messages))


def test_openai_stream_helper_assembles_parallel_calls_and_usage(server: str):
    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    tools = [{"type": "function", "function": {"name": "run_show_command", "parameters": {"type": "object"}}}]
    state = ChatCompletionStreamState()
    for chunk in client.chat.completions.create(
        model="fake-model",
        stream=True,
        tools=tools,
        messages=[{"role": "user", "content": tag_for("parallel-tools", "helper")}],
    ):
        state.handle_chunk(chunk)
    completion = state.get_final_completion()
    message = completion.choices[0].message
    assert message.content == "Checking both routers."
    assert [c.id for c in message.tool_calls] == ["call_par_1", "call_par_2"]
    assert message.tool_calls[1].function.arguments == '{"command":"show ip route","device":"R2"}'
    assert completion.choices[0].finish_reason == "tool_calls"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (150, 40)
    with client.chat.completions.stream(
        model="fake-model",
        messages=[{"role": "user", "content": tag_for("plain", "helper")}],
        tools=tools,
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "The lab looks healthy."


def test_non_streaming_completion(server: str):
    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    completion = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": tag_for("tool-round-trip", "ns")}],
        tools=[{"type": "function", "function": {"name": "get_topology", "parameters": {"type": "object"}}}],
    )
    assert completion.choices[0].message.tool_calls[0].function.arguments == '{"detail":"summary"}'
    assert completion.usage.total_tokens == 138


def test_scripted_http_failure_is_not_retried(server: str):
    httpx.delete(control(server) + "/control/requests")
    client = openai.OpenAI(base_url=server, api_key="sk-test")  # default retries: 2
    with pytest.raises(openai.InternalServerError, match="fake upstream failure"):
        client.chat.completions.create(
            model="fake-model",
            stream=True,
            tools=[{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}],
            messages=[{"role": "user", "content": tag_for("llm-error", "noretry")}],
        )
    records = httpx.get(control(server) + "/control/requests", params={"run": "noretry"}).json()["requests"]
    assert len(records) == 1 and records[0]["outcome"].startswith("failed")


def test_mid_stream_failure_reaches_the_client(server: str):
    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    received = []
    with pytest.raises(openai.APIError, match="connection reset by fake upstream"):
        for chunk in client.chat.completions.create(
            model="fake-model",
            stream=True,
            tools=[{"type": "function", "function": {"name": "t", "parameters": {}}}],
            messages=[{"role": "user", "content": tag_for("mid-stream-error", "mid")}],
        ):
            received += [c.delta.content for c in chunk.choices if c.delta.content]
    assert received == ["Let me check"]


def test_in_process_failures_raise():
    model = FakeScriptedChatModel().bind_tools(TOOLS)
    with pytest.raises(ScriptedFailure, match="fake upstream failure"):
        model.invoke([HumanMessage(tag_for("llm-error"))])
    chunks = []
    with pytest.raises(ScriptedFailure, match="mid-stream"):
        for chunk in model.stream([HumanMessage(tag_for("mid-stream-error"))]):
            chunks.append(chunk.content)
    assert chunks == ["Let me check"]


def test_selection_error_is_an_openai_400_naming_tag_and_step(server: str):
    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(
            model="fake-model",
            stream=True,
            messages=[{"role": "user", "content": "[[fake-llm:missing-script:x]]"}],
            tools=[{"type": "function", "function": {"name": "t", "parameters": {}}}],
        )
    assert error.value.code == "fake_llm_script_error"
    assert "[[fake-llm:missing-script:x]]" in str(error.value) and "step 0" in str(error.value)


def test_control_api_registers_scripts_and_logs_requests(server: str):
    base = control(server)
    script = {
        "name": "registered-at-run-time",
        "steps": [{"text_chunks": ["ok"], "usage": {"input_tokens": 5, "output_tokens": 1}}],
        "title": {"text_chunks": ["T"], "usage": {"input_tokens": 1, "output_tokens": 1}},
    }
    assert httpx.post(base + "/control/scripts", json=script).status_code == 201
    bad = httpx.post(base + "/control/scripts", json={**script, "steps": [{"text_chunks": ["x"]}]})
    assert bad.status_code == 422 and "step 0: 'usage' is a required property" in bad.json()["message"]
    reply = (
        chat_openai(server, temperature=0.3)
        .bind_tools(TOOLS)
        .invoke([HumanMessage(tag_for("registered-at-run-time", "ctl"))])
    )
    assert reply.content == "ok"
    [record] = httpx.get(base + "/control/requests", params={"run": "ctl"}).json()["requests"]
    assert record["temperature"] == 0.3 and record["model"] == "fake-model"
    assert record["tools"] == ["get_topology", "run_show_command"] and record["step"] == 0
    assert record["extra"]["authorization"] == "Bearer sk-test"


def test_200_concurrent_streams_without_error(server: str):
    async def one(client: httpx.AsyncClient, i: int) -> bool:
        body = {
            "model": "fake-model",
            "stream": True,
            "tools": [{"type": "function", "function": {"name": "t"}}],
            "messages": [{"role": "user", "content": tag_for("parallel-tools", f"load{i}")}],
        }
        async with client.stream("POST", server + "/chat/completions", json=body) as response:
            text = "".join([part async for part in response.aiter_text()])
        return response.status_code == 200 and text.endswith("data: [DONE]\n\n") and '"usage":{' in text

    async def run() -> list[bool]:
        limits = httpx.Limits(max_connections=200)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:
            return await asyncio.gather(*(one(client, i) for i in range(200)))

    started = time.perf_counter()
    results = asyncio.run(run())
    print(f"\n200 concurrent streams: {sum(results)} ok in {time.perf_counter() - started:.2f} s")
    assert all(results)


def test_async_stream_and_generate_match_sync():
    model = FakeScriptedChatModel().bind_tools(TOOLS)
    messages = CONVERSATIONS["parallel"]

    async def run():
        chunks = [chunk async for chunk in model.astream(messages)]
        merged = chunks[0]
        for chunk in chunks[1:]:
            merged = merged + chunk
        return merged, await model.ainvoke(messages)

    merged, generated = asyncio.run(run())
    sync = model.invoke(messages)
    assert assemble(generated) == assemble(sync)
    assert [c["id"] for c in merged.tool_calls] == ["call_par_1", "call_par_2"]
    assert generated.id == sync.id  # deterministic ids


def test_the_readme_serve_command_serves_the_built_in_scripts_and_a_folder_of_extra_ones(tmp_path):
    """As the README shows it, with 8099 swapped for a free port; `my-scripts/` holds one script of our own."""
    command = readme_command(".venv/bin/python -m fake_llm serve --port 8099 --scripts my-scripts/")
    (tmp_path / "my-scripts").mkdir()
    usage = {"input_tokens": 1, "output_tokens": 1}
    script = {
        "name": "my-check",
        "steps": [{"text_chunks": ["Hi"], "usage": usage}],
        "title": {"text_chunks": ["T"], "usage": usage},
    }
    (tmp_path / "my-scripts" / "my-check.yaml").write_text(json.dumps(script), encoding="utf-8")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = [str(ROOT / command[0]), *command[1:]]
    argv[argv.index("8099")] = str(port)
    process = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        builtin = len(ScriptLibrary.from_folders([]).names())
        assert line, process.stderr.read()
        assert line.strip() == f"fake-llm listening on http://127.0.0.1:{port}/v1 ({builtin + 1} scripts)"
    finally:
        process.terminate()
        process.wait(timeout=10)
