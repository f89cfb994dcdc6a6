// Drives an MCP server over stdio with the official MCP TypeScript SDK's
// client, for services/cli/tests/cli/mcp.rs.
//
// The script comes on stdin, one JSON step a line; each step is answered by
// one JSON line on stdout (so the test can act as a person between steps):
//
//   {"op":"start","command":PATH,"args":[…],"env":{…}}  → {"pid"}
//   {"op":"list_tools"}                                  → {"tools":[…]}
//   {"op":"call","name":TOOL,"arguments":{…},"timeoutMs"?} → {"result"} | {"error"}
//   {"op":"kill"}   SIGKILL the server                   → {"killed","stderr","errors"}
//   {"op":"close"}  close stdin, let the server end      → {"closed","stderr","errors"}
//
// "stderr" is everything the server wrote there; "errors" every error the
// client's transport saw (a server writing anything but protocol to
// stdout shows here). At the end of the script an open client is closed.

import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

let client = null;
let transport = null;
let stderr = "";
let errors = [];

function say(answer) {
  process.stdout.write(JSON.stringify(answer) + "\n");
}

async function start(step) {
  stderr = "";
  errors = [];
  transport = new StdioClientTransport({
    command: step.command,
    args: step.args ?? [],
    env: step.env ?? {},
    stderr: "pipe",
  });
  transport.stderr.on("data", (chunk) => {
    stderr += chunk.toString("utf8");
  });
  client = new Client({ name: "planshare-mcp-test", version: "1.0.0" });
  client.onerror = (error) => errors.push(String(error?.message ?? error));
  await client.connect(transport);
  return { pid: transport.pid };
}

async function stop(kill) {
  if (!client) return { error: "no server is running" };
  const pid = transport.pid;
  const ended = new Promise((resolve) => {
    const previous = transport.onclose;
    transport.onclose = () => {
      previous?.();
      resolve();
    };
  });
  if (kill && pid) {
    process.kill(pid, "SIGKILL");
    await ended;
  }
  await client.close();
  // Let the last of stderr arrive.
  await new Promise((resolve) => setTimeout(resolve, 100));
  client = null;
  transport = null;
  return { [kill ? "killed" : "closed"]: true, stderr, errors };
}

async function run(step) {
  switch (step.op) {
    case "start":
      return start(step);
    case "list_tools":
      return { tools: (await client.listTools()).tools };
    case "call":
      try {
        const options = step.timeoutMs ? { timeout: step.timeoutMs } : undefined;
        const result = await client.callTool(
          { name: step.name, arguments: step.arguments ?? {} },
          undefined,
          options,
        );
        return { result };
      } catch (error) {
        return { error: String(error?.message ?? error) };
      }
    case "kill":
      return stop(true);
    case "close":
      return stop(false);
    default:
      return { error: `unknown op ${step.op}` };
  }
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  let answer;
  try {
    answer = await run(JSON.parse(line));
  } catch (error) {
    answer = { error: String(error?.stack ?? error) };
  }
  say(answer);
}
if (client) await stop(false);
