// The official TypeScript SDK client against a toolwright Streamable HTTP server:
// connect (initialize, session, GET stream), list tools, call add, close (DELETE).
// Usage: node sdk_client.mjs http://127.0.0.1:PORT/mcp
// Prints one JSON line with what it saw; exits non-zero on any failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = process.argv[2];
if (!url) {
  console.error('usage: node sdk_client.mjs URL');
  process.exit(2);
}

const client = new Client({ name: 'toolwright-sdk-test', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url));
const errors = [];
client.onerror = (e) => errors.push(String(e));

await client.connect(transport);
const sessionId = transport.sessionId;
const protocolVersion = transport.protocolVersion;
const { tools } = await client.listTools();
const result = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
await transport.terminateSession();
await client.close();

console.log(JSON.stringify({
  sessionId,
  protocolVersion,
  server: client.getServerVersion(),
  tools: tools.map((t) => t.name),
  result,
  errors,
}));
