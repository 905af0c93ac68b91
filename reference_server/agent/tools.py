"""A small deterministic GNS3-like tool set over a simulated topology stored with the project."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, ToolException, tool
from pydantic import BaseModel

from reference_server.private_files import write_private

TOPOLOGY_FILE = "topology.json"

DEFAULT_TOPOLOGY: dict[str, Any] = {
    "nodes": [
        {"name": "R1", "type": "router", "interfaces": {"Gi0/0": "10.0.0.1/24", "Gi0/1": "192.168.1.1/24"}},
        {"name": "R2", "type": "router", "interfaces": {"Gi0/0": "10.0.0.2/24", "Gi0/1": "192.168.2.1/24"}},
        {"name": "SW1", "type": "switch", "interfaces": {}},
        {"name": "PC1", "type": "vpcs", "interfaces": {"eth0": "192.168.1.10/24"}},
    ],
    "links": [["R1:Gi0/0", "R2:Gi0/0"], ["R1:Gi0/1", "SW1:1"], ["SW1:2", "PC1:eth0"]],
}

MAX_WAIT_SECONDS = 30.0


def write_default_topology(project_dir: Path) -> None:
    write_private(project_dir / TOPOLOGY_FILE, json.dumps(DEFAULT_TOPOLOGY, indent=2))


def _canned_output(node: dict[str, Any], command: str) -> str:
    name, interfaces = node["name"], node.get("interfaces", {})
    if command == "show ip interface brief":
        rows = [f"{ifname:<12}{address.split('/')[0]:<16}up    up" for ifname, address in interfaces.items()]
        return "\n".join([f"{'Interface':<12}{'IP-Address':<16}Status Protocol", *rows])
    if command == "show ip route":
        routes = [f"C    {address} is directly connected, {ifname}" for ifname, address in interfaces.items()]
        return "\n".join([f"{name} routing table:", *routes, "S    10.0.0.0/24 [1/0] via 10.0.0.2"])
    if command == "show version":
        return f"{name}: GNS3 simulated {node['type']}, version 1.0"
    raise ToolException(
        f"{name}: unsupported command {command!r}; try show ip route, show ip interface brief, show version"
    )


class _TopologyArgs(BaseModel):
    detail: str = "summary"


class _ShowArgs(BaseModel):
    device: str
    command: str


class _WaitArgs(BaseModel):
    seconds: float


class _FailingArgs(BaseModel):
    reason: str = ""


# The argument schemas are made once: inferring them from each project's functions made a pydantic model per tool
# and project, a large part of opening a project.
def make_tools(project_dir: Path) -> list[BaseTool]:
    """The agent's tools for one project; every failure is a ToolException, reported as a tool result, except
    raising_tool's, which the tool node catches (graph.run_tool).

    All are coroutines: none blocks, and parallel calls then start and end in a deterministic order.
    """

    def topology() -> dict[str, Any]:
        path = project_dir / TOPOLOGY_FILE
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else DEFAULT_TOPOLOGY

    @tool(args_schema=_TopologyArgs)
    async def get_topology(detail: str = "summary") -> str:
        """Read the project's topology: its nodes and links. detail is 'summary' or 'full'."""
        data = topology()
        if detail == "full":
            return json.dumps(data, indent=2, sort_keys=True)
        names = ", ".join(node["name"] for node in data["nodes"])
        return f"{len(data['nodes'])} nodes ({names}) and {len(data['links'])} links"

    @tool(args_schema=_ShowArgs)
    async def run_show_command(device: str, command: str) -> str:
        """Run a read-only show command on a device of the topology and return its output."""
        node = next((n for n in topology()["nodes"] if n["name"] == device), None)
        if node is None:
            raise ToolException(f"no device named {device!r} in the topology")
        return _canned_output(node, command.strip())

    @tool(args_schema=_WaitArgs)
    async def wait_seconds(seconds: float) -> str:
        """Wait a number of seconds (at most 30), for example for a protocol to converge."""
        if not 0 <= seconds <= MAX_WAIT_SECONDS:
            raise ToolException(f"seconds must be between 0 and {MAX_WAIT_SECONDS:g}")
        await asyncio.sleep(seconds)
        return json.dumps({"waited": seconds})

    @tool(args_schema=_FailingArgs)
    async def failing_tool(reason: str = "") -> str:
        """A tool that always fails; it exists so that the failure path of a turn can be exercised."""
        raise ToolException(f"failing_tool failed on purpose ({reason or 'no reason given'})")

    @tool(args_schema=_FailingArgs)
    async def raising_tool(reason: str = "") -> str:
        """A tool whose code raises (a bug, not a reported failure); it exists so that a turn's tool that raises can be
        exercised."""
        # Not a ToolException: handle_tool_error lets it through, and the tool node makes it the call's failed result,
        # ended by a tool_end like any other (TOOLCALL-008).
        raise RuntimeError(f"raising_tool raised on purpose ({reason or 'no reason given'})")

    tools = [get_topology, run_show_command, wait_seconds, failing_tool, raising_tool]
    for item in tools:
        item.handle_tool_error = True
        item.handle_validation_error = True
    return tools
