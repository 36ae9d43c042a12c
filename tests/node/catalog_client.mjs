// The official TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2) reading a gateway's
// catalog, for crates/cli/tests/it/gateway_live.rs: what the gateway announced at
// initialize, its prompts, one prompt got and one resource read.
//
// Usage: node catalog_client.mjs COMMAND ARG...   (the server to spawn over stdio)
// Prints one JSON line: {"capabilities", "prompts": [names], "greeting", "note"}.

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('catalog_client.mjs: give the server command');
  process.exit(2);
}
const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
const client = new Client({ name: 'toolwright-catalog-test', version: '1.0.0' }, { capabilities: {} });
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' });
const out = {};
try {
  await client.connect(transport);
  out.capabilities = client.getServerCapabilities();
  out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  const got = await client.getPrompt({ name: 'cat__greet', arguments: { name: 'Ada' } });
  out.greeting = got.messages[0].content.text;
  const read = await client.readResource({ uri: 'peer://note' });
  out.note = read.contents[0].text;
} catch (e) {
  out.error = String(e && e.message ? e.message : e);
}
console.log(JSON.stringify(out));
await client.close();
process.exit(0);
