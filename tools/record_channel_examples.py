"""Record the golden streams of every channel from the reference server and the fake LLM (spec/examples/channels/).

    python tools/record_channel_examples.py [--check]

One turn per scenario and channel, each in its own session with a fixed id, served in-process. The bodies are
exact but for what differs from run to run: every UUID and 32-digit hex id is replaced by a numbered stand-in of
the same shape (in order of appearance, so equal ids stay equal), and timestamps by a fixed one. --check
records again and exits 1 naming each file that is stale.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reference_server.app import create_app  # noqa: E402
from reference_server.settings import Settings  # noqa: E402
from tools.channel_requests import CHANNELS  # noqa: E402

EXAMPLES = ROOT / "spec" / "examples" / "channels"
SCENARIOS = {  # file name -> fake-LLM script (spec/fake-llm)
    "plain-answer": "plain",
    "tool-round-trip": "tool-round-trip",
    "parallel-tool-calls": "parallel-tools",
    "llm-error": "llm-error",
    "mid-stream-error": "mid-stream-error",
}
FIXED_TIME = 1767225600  # 2026-01-01T00:00:00Z
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX32 = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
_TIME = re.compile(r'"(created|created_at|completed_at|timestamp)":\s?[0-9]+(\.[0-9]+)?')


def normalized(body: str) -> str:
    seen: dict[str, str] = {}

    def stand_in(match: re.Match[str]) -> str:
        value = match.group(0)
        if value not in seen:
            n = len(seen) + 1
            seen[value] = f"00000000-0000-4000-8000-{n:012d}" if "-" in value else f"{n:032x}"
        return seen[value]

    body = _UUID.sub(stand_in, body)
    body = _HEX32.sub(stand_in, body)
    return _TIME.sub(lambda m: f'"{m.group(1)}":{FIXED_TIME}', body)


async def record() -> dict[Path, str]:
    recorded: dict[Path, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Settings(data_dir=Path(tmp) / "data", heartbeat_interval=30.0))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://reference", timeout=60) as client:
                login = await client.post(
                    "/v3/access/users/authenticate", json={"username": "admin", "password": "admin"}
                )
                headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
                project = await client.post("/v3/projects", json={"name": "examples"}, headers=headers)
                prefix = f"/v3/projects/{project.json()['project_id']}/chat"
                for channel, build in CHANNELS.items():
                    for scenario, script in SCENARIOS.items():
                        path, body = build(f"example-{scenario}", f"Show me the lab [[fake-llm:{script}]]")
                        response = await client.post(prefix + path, json=body, headers=headers)
                        if response.status_code != 200:
                            raise RuntimeError(f"{channel} {scenario}: {response.status_code} {response.text}")
                        recorded[EXAMPLES / channel / f"{scenario}.sse"] = normalized(response.text)
    return recorded


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed example is stale")
    args = parser.parse_args(argv)
    recorded = asyncio.run(record())
    stale = [path for path, text in recorded.items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)} (run python tools/record_channel_examples.py)")
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(recorded[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
