// The official TypeScript SDK client, in legacy session mode, through nginx to replicas
// that share sessions in Redis (deploy/run.sh): calls with progress, elicitation round
// trips, list_changed on the GET stream; then the replica holding the GET stream is killed
// during a call, and the client's own reconnection (Last-Event-ID) is watched.
// Usage: node shared_sessions.mjs URL HOST:PORT=PID…   (the replicas, to kill one)
// Prints one JSON line with what it saw; exits non-zero on failures it cannot report.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, ...pairs] = process.argv.slice(2);
if (!url) {
  console.error('usage: node shared_sessions.mjs URL HOST:PORT=PID...');
  process.exit(2);
}
const pids = Object.fromEntries(pairs.map((p) => p.split('=')));

import net from 'node:net';
const refused = {};
function watchPort(hostPort) {
  const [host, port] = hostPort.split(':');
  const probe = () => {
    const s = net.connect({ host, port: Number(port) });
    s.on('connect', () => {
      s.destroy();
      setTimeout(probe, 20);
    });
    s.on('error', () => {
      refused[hostPort] = true;
    });
  };
  probe();
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
const upstreamOf = (res) => (res.headers.get('x-upstream') ?? '').split(', ').pop();

// Every GET stream the SDK opens (with its Last-Event-ID and the ids of the events it
// carried, read from a copy of the body) and every POST (with the replica that answered).
const gets = [];
const posts = [];
async function tracingFetch(input, init = {}) {
  const res = await fetch(input, init);
  const method = init.method ?? 'GET';
  if (method === 'GET' && res.ok && res.body) {
    const rec = { upstream: upstreamOf(res), lastEventId: new Headers(init.headers).get('last-event-id'), ids: [] };
    gets.push(rec);
    const [mine, theirs] = res.body.tee();
    (async () => {
      const reader = mine.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value.replaceAll('\r\n', '\n');
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const ev = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let id = null;
            let data = '';
            for (const line of ev.split('\n')) {
              if (line.startsWith('id:')) id = line.slice(3).trim();
              if (line.startsWith('data:')) data += line.slice(5);
            }
            if (id && data.trim()) rec.ids.push(id);
          }
        }
      } catch {
        rec.broken = true;
      }
    })();
    return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
  if (method === 'POST') posts.push({ upstream: upstreamOf(res), body: String(init.body ?? '') });
  return res;
}

const errors = [];
const client = new Client({ name: 'toolwright-shared-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
client.onerror = (e) => errors.push(String(e));
let listChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged += 1;
});
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: 'accept',
  content: { username: 'u', email: 'u@example.com' },
}));
const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: tracingFetch });
transport.onerror = (e) => errors.push(String(e));
await client.connect(transport);
await until('the GET stream', () => gets.length > 0);

// Calls with progress.
const progress = [];
await client.callTool({ name: 'probe_progress', arguments: { steps: 3 } }, undefined, {
  onprogress: (p) => progress.push(p.progress),
});

// Elicitation round trips: the answer is a POST of its own, which may land anywhere.
const elicited = [];
for (let i = 0; i < 3; i += 1) {
  const before = posts.length;
  const r = await client.callTool({ name: 'test_elicitation', arguments: { message: `m${i}` } });
  const mine = posts.slice(before);
  const call = mine.find((p) => p.body.includes('"tools/call"'));
  const answer = mine.find((p) => p.body.includes('"result"') && !p.body.includes('"method"'));
  elicited.push({ text: r.content?.[0]?.text, call: call?.upstream, answer: answer?.upstream });
}

// list_changed on the GET stream.
await client.callTool({ name: 'probe_toggle', arguments: {} });
await until('the first list_changed', () => listChanged >= 1);

// A long call on a replica other than the GET stream's; kill the GET stream's replica.
const getHolder = gets[gets.length - 1].upstream;
let long = null;
for (let attempt = 0; attempt < 6 && !long; attempt += 1) {
  const before = posts.length;
  const steps = [];
  const call = client.callTool({ name: 'probe_progress', arguments: { steps: 10, delay_ms: 150 } }, undefined, {
    onprogress: (p) => steps.push(p.progress),
    timeout: 60000,
  });
  await until('the long call to start', () => posts.length > before && steps.length > 0);
  const on = posts[before].upstream;
  if (on === getHolder) {
    await call;
  } else {
    long = { call, on, steps };
  }
}
if (!long) throw new Error('every long call landed on the GET stream\'s replica');
const toggles = 4;
let killed = null;
for (let k = 1; k <= toggles; k += 1) {
  if (k === 2) {
    killed = getHolder;
    watchPort(getHolder);
    process.kill(Number(pids[getHolder]), 'SIGKILL');
    // Until its port refuses connections: a request nginx sends to a replica as it dies is
    // lost with it (a POST is not retried elsewhere), which is not what is tested here.
    await until('the replica to die', () => refused[getHolder]);
  }
  await client.callTool({ name: 'probe_toggle', arguments: {} });
}
const longResult = await long.call;
await until('every list_changed', () => listChanged >= 1 + toggles, 20000);
await sleep(1500); // anything duplicated would arrive by now
await transport.terminateSession().catch((e) => errors.push(String(e)));
await client.close();

console.log(JSON.stringify({
  progress,
  elicited,
  listChanged,
  expectedListChanged: 1 + toggles,
  killed,
  longOn: long.on,
  longSteps: long.steps,
  longResult: longResult.structuredContent,
  gets: gets.map(({ upstream, lastEventId, ids }) => ({ upstream, lastEventId, ids })),
  errors,
}));
