// Log in, create a project, stream a turn that calls a tool, list the sessions.
//   COPILOT_BASE_URL=http://127.0.0.1:3080 node_modules/.bin/tsx sdk/typescript/examples/quickstart.ts
// (the reference server seeds admin/admin, whose LLM is the scripted fake LLM: `[[fake-llm:...]]` picks a script).
import { type ChatStreamEvent, createCopilotClient } from '../src/index.js';

const client = createCopilotClient({
  baseUrl: process.env.COPILOT_BASE_URL ?? 'http://127.0.0.1:3080',
  chatRoot: process.env.COPILOT_CHAT_ROOT === '/v3/copilot' ? '/v3/copilot' : '/v3',
});
await client.login(process.env.COPILOT_USERNAME ?? 'admin', process.env.COPILOT_PASSWORD ?? 'admin');
const project = await client.createProject(`quickstart-${Date.now()}`);

let answer = '';
for await (const event of client.streamChat(project.project_id, {
  message: 'What is in my lab? [[fake-llm:tool-round-trip]]',
})) {
  describe(event);
}
console.log(`answer: ${answer}`);

const sessions = await client.listSessions(project.project_id);
const titles = sessions.map((session) => `${session.title} (${session.message_count} messages)`);
console.log(`sessions: ${titles.join(', ')}`);

function describe(event: ChatStreamEvent): void {
  switch (event.type) {
    case 'tool_call':
      if (event.tool_call.function.complete) console.log(`calls ${event.tool_call.function.name}`);
      break;
    case 'tool_start':
      console.log(`runs ${event.tool_name}`);
      break;
    case 'tool_end':
      console.log(`${event.tool_name} answered`);
      break;
    case 'content':
      answer += event.content;
      break;
    case 'heartbeat':
      break;
    case 'error':
      console.log(`error: ${event.error}`);
      break;
    case 'done':
      console.log(`done (session ${event.session_id})`);
      break;
    default: {
      const unexpected: never = event; // a new event type in the contract fails type-checking here
      throw new Error(`unknown event ${JSON.stringify(unexpected)}`);
    }
  }
}
