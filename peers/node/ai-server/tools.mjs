// Our agent's four tools (reference_server/agent/tools.py) for the `ai` peer, which cannot import Python: the same
// names, descriptions, input schemas and outputs over the same simulated topology. A failure is thrown, and `ai`
// reports it as the call's tool error, as the reference server reports its ToolException as the tool's result.
// tests/peers/test_node_peer_tools.py runs these next to the Python ones, so that the two cannot drift apart.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { tool } from "ai";
import { z } from "zod";

export const TOPOLOGY_FILE = "topology.json";
export const MAX_WAIT_SECONDS = 30;

export const DEFAULT_TOPOLOGY = {
  nodes: [
    { name: "R1", type: "router", interfaces: { "Gi0/0": "10.0.0.1/24", "Gi0/1": "192.168.1.1/24" } },
    { name: "R2", type: "router", interfaces: { "Gi0/0": "10.0.0.2/24", "Gi0/1": "192.168.2.1/24" } },
    { name: "SW1", type: "switch", interfaces: {} },
    { name: "PC1", type: "vpcs", interfaces: { eth0: "192.168.1.10/24" } },
  ],
  links: [
    ["R1:Gi0/0", "R2:Gi0/0"],
    ["R1:Gi0/1", "SW1:1"],
    ["SW1:2", "PC1:eth0"],
  ],
};

// Python's repr() of a str, as the reference server's messages quote names with `{name!r}`.
export function pyRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = "";
  for (const char of text) {
    const code = char.codePointAt(0);
    if (char === "\\" || char === quote) out += "\\" + char;
    else if (char === "\n") out += "\\n";
    else if (char === "\r") out += "\\r";
    else if (char === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
    else out += char;
  }
  return quote + out + quote;
}

// Python's repr() of a float (json.dumps writes floats so): "3.0", "0.5", "1e-05".
export function pyFloat(value) {
  if (Number.isInteger(value) && Math.abs(value) < 1e16) return `${value}.0`;
  const magnitude = Math.abs(value);
  if (magnitude !== 0 && (magnitude < 1e-4 || magnitude >= 1e16)) {
    const [mantissa, exponent] = value.toExponential().split("e");
    const sign = exponent.startsWith("-") ? "-" : "+";
    return `${mantissa}e${sign}${exponent.replace(/^[-+]/, "").padStart(2, "0")}`;
  }
  return String(value);
}

// json.dumps(data, indent=2, sort_keys=True): the topology holds strings, lists and objects only.
function sortedKeys(value) {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortedKeys(value[key])]),
    );
  }
  return value;
}

function cannedOutput(node, command) {
  const { name } = node;
  const interfaces = Object.entries(node.interfaces ?? {});
  if (command === "show ip interface brief") {
    const rows = interfaces.map(([ifname, address]) => `${ifname.padEnd(12)}${address.split("/")[0].padEnd(16)}up    up`);
    return [`${"Interface".padEnd(12)}${"IP-Address".padEnd(16)}Status Protocol`, ...rows].join("\n");
  }
  if (command === "show ip route") {
    const routes = interfaces.map(([ifname, address]) => `C    ${address} is directly connected, ${ifname}`);
    return [`${name} routing table:`, ...routes, "S    10.0.0.0/24 [1/0] via 10.0.0.2"].join("\n");
  }
  if (command === "show version") return `${name}: GNS3 simulated ${node.type}, version 1.0`;
  throw new Error(
    `${name}: unsupported command ${pyRepr(command)}; try show ip route, show ip interface brief, show version`,
  );
}

/** The tools for one project folder: its topology.json when there is one, else DEFAULT_TOPOLOGY. */
export function makeTools(projectDir) {
  const topology = () => {
    try {
      return JSON.parse(readFileSync(join(projectDir, TOPOLOGY_FILE), "utf-8"));
    } catch (error) {
      if (error.code === "ENOENT") return DEFAULT_TOPOLOGY;
      throw error;
    }
  };
  return {
    get_topology: tool({
      description: "Read the project's topology: its nodes and links. detail is 'summary' or 'full'.",
      inputSchema: z.object({ detail: z.string().default("summary") }),
      execute: async ({ detail = "summary" }) => {
        const data = topology();
        if (detail === "full") return JSON.stringify(sortedKeys(data), null, 2);
        const names = data.nodes.map((node) => node.name).join(", ");
        return `${data.nodes.length} nodes (${names}) and ${data.links.length} links`;
      },
    }),
    run_show_command: tool({
      description: "Run a read-only show command on a device of the topology and return its output.",
      inputSchema: z.object({ device: z.string(), command: z.string() }),
      execute: async ({ device, command }) => {
        const node = topology().nodes.find((each) => each.name === device);
        if (node === undefined) throw new Error(`no device named ${pyRepr(device)} in the topology`);
        return cannedOutput(node, command.trim());
      },
    }),
    wait_seconds: tool({
      description: "Wait a number of seconds (at most 30), for example for a protocol to converge.",
      inputSchema: z.object({ seconds: z.number() }),
      execute: async ({ seconds }, { abortSignal } = {}) => {
        if (!(seconds >= 0 && seconds <= MAX_WAIT_SECONDS)) {
          throw new Error(`seconds must be between 0 and ${MAX_WAIT_SECONDS}`);
        }
        await sleep(seconds * 1000, undefined, { signal: abortSignal });
        return `{"waited": ${pyFloat(seconds)}}`;
      },
    }),
    failing_tool: tool({
      description: "A tool that always fails; it exists so that the failure path of a turn can be exercised.",
      inputSchema: z.object({ reason: z.string().default("") }),
      execute: async ({ reason = "" }) => {
        throw new Error(`failing_tool failed on purpose (${reason || "no reason given"})`);
      },
    }),
    raising_tool: tool({
      description:
        "A tool whose code raises (a bug, not a reported failure); it exists so that a turn's tool that raises can be\n        exercised.",
      inputSchema: z.object({ reason: z.string().default("") }),
      execute: async ({ reason = "" }) => {
        // In `ai` a tool fails only by throwing, so this is failing_tool's path with the Python tool's own words.
        throw new Error(`raising_tool raised on purpose (${reason || "no reason given"})`);
      },
    }),
  };
}
