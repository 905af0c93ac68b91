"""The `ai` peer's tools (peers/node/ai-server/tools.mjs) are ours (reference_server/agent/tools.py) written again in
JavaScript, since a Node server cannot import Python: the same names, descriptions and input schemas (as the model
is shown them), and for the same inputs over the same project folder the same outputs and the same failures.

Node runs a tiny script importing tools.mjs from the repository; Node resolves its `ai` and `zod` from the
repository's node_modules (`npm ci` at the root, done by `python3 tasks.py test`), which pin the peer's versions
(checked below), so no peer install is needed."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from langchain_core.tools import ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool

from peers import REPO, get_peer
from reference_server.agent.tools import TOPOLOGY_FILE, make_tools

PEER = get_peer("ai-server")
TOOLS_MODULE = PEER.node_package / "tools.mjs"

CASES: list[tuple[str, dict[str, Any]]] = [
    ("get_topology", {}),
    ("get_topology", {"detail": "summary"}),
    ("get_topology", {"detail": "full"}),
    ("run_show_command", {"device": "R1", "command": "show ip route"}),
    ("run_show_command", {"device": "R2", "command": "show ip interface brief"}),
    ("run_show_command", {"device": "SW1", "command": "show ip interface brief"}),
    ("run_show_command", {"device": "SW1", "command": "show ip route"}),
    ("run_show_command", {"device": "PC1", "command": "  show version\n"}),
    ("run_show_command", {"device": "R9", "command": "show ip route"}),
    ("run_show_command", {"device": "it's", "command": "show version"}),
    ("run_show_command", {"device": "R1", "command": "reload"}),
    ("run_show_command", {"device": "R1", "command": 'say "it\'s"\t\\'}),
    ("wait_seconds", {"seconds": 0}),
    ("wait_seconds", {"seconds": 0.05}),
    ("wait_seconds", {"seconds": 0.00001}),
    ("wait_seconds", {"seconds": 31}),
    ("wait_seconds", {"seconds": -1}),
    ("failing_tool", {}),
    ("failing_tool", {"reason": "conformance"}),
    ("raising_tool", {}),
    ("raising_tool", {"reason": "conformance"}),
]

# Runs each case through the tool's own input schema (defaults filled) and its execute; prints one JSON line.
DRIVER = """
import { asSchema } from "ai";
const [moduleUrl, argument] = process.argv.slice(-2);
const { makeTools } = await import(moduleUrl);
const { projectDir, cases } = JSON.parse(argument);
const tools = makeTools(projectDir);
const schemas = {};
for (const [name, tool] of Object.entries(tools)) {
  schemas[name] = { description: tool.description, parameters: await asSchema(tool.inputSchema).jsonSchema };
}
const results = [];
for (const [name, args] of cases) {
  try {
    const input = tools[name].inputSchema.parse(args);
    results.push({ output: await tools[name].execute(input, { toolCallId: "t", messages: [] }) });
  } catch (error) {
    results.push({ error: error.message });
  }
}
console.log(JSON.stringify({ schemas, results }));
"""


def _js(project_dir: Path) -> dict[str, Any]:
    node = shutil.which("node")
    assert node, "Node.js 20 or newer is needed (the project's JavaScript clients need it too)"
    assert (REPO / "node_modules" / "ai").is_dir(), "the repository's node_modules is missing: run `npm ci` at its root"
    argument = json.dumps({"projectDir": str(project_dir), "cases": CASES})
    # cwd: the repository, so that the driver's own `import "ai"` resolves as tools.mjs's does (its node_modules)
    completed = subprocess.run(
        [node, "--input-type=module", "-e", DRIVER, TOOLS_MODULE.as_uri(), argument],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


async def _python(project_dir: Path) -> tuple[dict[str, Any], list[dict[str, str]]]:
    tools = {tool.name: tool for tool in make_tools(project_dir)}
    schemas = {}
    for name, tool in tools.items():
        function = convert_to_openai_tool(tool)["function"]
        schemas[name] = {"description": function["description"], "parameters": function["parameters"]}
    results = []
    for name, args in CASES:
        tool = tools[name]
        try:
            results.append({"output": await tool.coroutine(**tool.args_schema(**args).model_dump())})
        except (ToolException, RuntimeError) as exc:  # a reported failure, or raising_tool's raise
            results.append({"error": str(exc)})
    return schemas, results


def _shape(schema: dict[str, Any]) -> dict[str, Any]:
    """What a parameters schema says of the arguments: each one's type and default, and which are required."""
    properties = {
        name: {key: value for key, value in spec.items() if key in ("type", "default")}
        for name, spec in schema.get("properties", {}).items()
    }
    return {"type": schema.get("type"), "properties": properties, "required": sorted(schema.get("required", []))}


def _compare(project_dir: Path) -> None:
    js = _js(project_dir)
    schemas, results = asyncio.run(_python(project_dir))
    assert sorted(js["schemas"]) == sorted(schemas)
    for name, ours in schemas.items():
        theirs = js["schemas"][name]
        assert theirs["description"] == ours["description"], name
        assert _shape(theirs["parameters"]) == _shape(ours["parameters"]), name
    for case, theirs, ours in zip(CASES, js["results"], results, strict=True):
        assert theirs == ours, case


def test_the_peer_pins_the_projects_ai_and_zod():
    """The test below runs tools.mjs with the repository's node_modules: they must be the peer's versions."""
    peer = json.loads((PEER.node_package / "package.json").read_text())["dependencies"]
    project = json.loads((REPO / "package.json").read_text())["dependencies"]
    assert peer["ai"] == project["ai"] == PEER.version
    assert peer["zod"] == project["zod"]


def test_the_js_tools_answer_as_ours_over_the_default_topology(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    _compare(project)


def test_the_js_tools_answer_as_ours_over_a_projects_own_topology(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    topology = {
        "nodes": [
            {"name": "Core", "type": "router", "interfaces": {"Eth1": "172.16.0.1/16", "Eth0": "10.1.1.1/30"}},
            {"name": "Edge", "type": "firewall"},
        ],
        "links": [["Core:Eth0", "Edge:1"]],
    }
    (project / TOPOLOGY_FILE).write_text(json.dumps(topology), encoding="utf-8")
    _compare(project)
