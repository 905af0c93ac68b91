"""Peers: third-party servers that serve a chat protocol over a LangGraph agent, judged by the conformance suite.

The contract's channels (OpenAI Chat Completions, AG-UI, ...) are public protocols that other projects already
serve over LangGraph. Running the suite against such a *peer* answers two questions: does the suite judge a
stranger's server fairly (a check that fails a well-known implementation for a reason the protocol does not state
is a bug of the suite), and where does the contract ask more than the protocol's usual servers do.

So that only the peer differs, every peer serves the same agent as the reference server
(`reference_server.agent.graph.build_graph` with its tools), its model the suite's fake LLM over HTTP through the
agent's own OpenAI client, and nothing of ours is added to the peer beyond what it needs to run that graph.

Each peer is pinned (peers/requirements-<peer>-<version>.txt, resolved by `python -m peers.pins`), installed into
its own virtual environment .cache/peers/<peer>/venv (`python -m peers.install`), and started by the suite through
its target file peers/targets/<target>.yaml, whose start command is `python -m peers.serve <peer>`: it becomes
`python -m peers.apps.<app>` of the peer's environment, listening on 127.0.0.1. Like gns3-server, a peer only
ever runs inside a network namespace whose only interface is loopback (`unshare -rn`, `ip link set lo up`), which
the run enters before the suite starts the fake LLM and the peer: `python3 tasks.py peers`.

This module uses the standard library only: the peers' environments import it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Peer:
    name: str
    """The key of PEERS (`--peer NAME`), also the name of its project folder in a run's workdir."""
    distribution: str
    """What is installed: the distribution on PyPI (or the npm package, for a Node peer); the name of its cache folder
    and of its pin list. Several peers may share one (one package's two adapters)."""
    version: str
    app: str
    """The module, run with the peer's python, that serves our agent with the peer (peers/apps/)."""
    target: str
    """Its target file peers/targets/<target>.yaml (also the name of its reports)."""
    extras: str = ""
    """The distribution's own pip extras, e.g. "fastapi" for ag-ui-langgraph's endpoint."""
    extra: tuple[str, ...] = ()
    """What our agent's modules need in the peer's environment beyond what the peer pulls in (versions from
    requirements/lock.txt)."""
    runtime: str = "python"
    """"python": a PyPI distribution in its own virtual environment, serving with an app of peers/apps/; "node":
    an npm package, pinned by peers/node/<name>/package-lock.json, installed with `npm ci` into
    .cache/peers/<distribution>/node, and served by `node` running `app`, a module of peers/node/<name>/."""

    @property
    def requirement(self) -> str:
        name = self.distribution
        return f"{name}[{self.extras}]=={self.version}" if self.extras else f"{name}=={self.version}"

    @property
    def requirements_file(self) -> Path:
        """The committed pin list: the peer and everything installed with it, exact versions."""
        return Path(__file__).with_name(f"requirements-{self.distribution}-{self.version}.txt")

    @property
    def venv(self) -> Path:
        return REPO / ".cache" / "peers" / self.distribution / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def target_file(self) -> Path:
        return Path(__file__).with_name("targets") / f"{self.target}.yaml"

    @property
    def node_package(self) -> Path:
        """A Node peer's package in the repository: package.json (exact versions), package-lock.json, its modules."""
        return Path(__file__).with_name("node") / self.name

    @property
    def node_home(self) -> Path:
        """Where a Node peer's lock is installed (a copy of package.json and the lock, node_modules beside them)."""
        return REPO / ".cache" / "peers" / self.distribution / "node"


# Our agent imports langchain-openai (its model client), PyYAML and jsonschema (the fake LLM's script library that
# reference_server.agent.llm_factory imports) and typing-extensions; the apps serve with uvicorn. ag-ui-langgraph's
# endpoint needs FastAPI, which it declares as its extra `fastapi`.
_AGENT = ("langchain-openai", "pyyaml", "jsonschema", "typing-extensions", "uvicorn")
# pydantic-ai serves our tools, not our graph: its agent calls its own OpenAI model client, so only the tools' module
# (langchain-core) and what the apps import of ours (PyYAML, jsonschema) come beside it. Its extras: `ag-ui` (the
# AG-UI adapter), `ui` (Starlette, for the Vercel AI adapter's requests), `openai` (its OpenAI chat model).
_PYDANTIC_AI_TOOLS = ("langchain-core", "pyyaml", "jsonschema", "typing-extensions", "uvicorn")

PEERS: dict[str, Peer] = {
    peer.name: peer
    for peer in (
        Peer(
            "langgraph-openai-serve",
            "langgraph-openai-serve",
            "0.31.0",
            "peers.apps.openai_serve",
            "langgraph-openai-serve-0.31",
            "",
            _AGENT,
        ),
        Peer(
            "ag-ui-langgraph",
            "ag-ui-langgraph",
            "0.0.47",
            "peers.apps.ag_ui",
            "ag-ui-langgraph-0.0.47",
            "fastapi",
            _AGENT,
        ),
        Peer(
            "pydantic-ai-ag-ui",
            "pydantic-ai-slim",
            "2.78.0",
            "peers.apps.pydantic_ai_ag_ui",
            "pydantic-ai-ag-ui-2.78",
            "ag-ui,ui,openai",
            _PYDANTIC_AI_TOOLS,
        ),
        Peer(
            "pydantic-ai-vercel-ai",
            "pydantic-ai-slim",
            "2.78.0",
            "peers.apps.pydantic_ai_vercel_ai",
            "pydantic-ai-vercel-ai-2.78",
            "ag-ui,ui,openai",
            _PYDANTIC_AI_TOOLS,
        ),
        # The `ai` package's own UI message stream server (Node): our tools written again in JS (its tools.mjs,
        # checked against ours by tests/peers/test_node_peer_tools.py), its model the fake LLM through
        # @ai-sdk/openai-compatible; the versions are those of peers/node/ai-server/package.json.
        Peer("ai-server", "ai", "6.0.325", "server.mjs", "ai-6.0.325", runtime="node"),
    )
}


def get_peer(name: str) -> Peer:
    try:
        return PEERS[name]
    except KeyError:
        raise ValueError(f"unknown peer {name!r}; the peers are: {', '.join(PEERS)}") from None
