// The official TypeScript SDK clients as drivers for the gateway tests
// (crates/cli/tests/it/gateway.rs): v1 = @modelcontextprotocol/sdk 1.32.2 (handshake era
// only), v2 = @modelcontextprotocol/client 2.4.0 (2026-07-28, or the handshake when the
// server has no other).
//
// Usage:
//   node gateway_client.mjs [--sdk v1|v2] [--era auto|modern|legacy]
//        [--elicit JSON] [--sample TEXT]
//        (--url URL | --stdio JSON_ARGV) STEP...
// Each STEP is a JSON object:
//   {"op":"list"}                                   -> {"tools":[...]} (every page)
//   {"op":"call","name":N,"arguments":{...}}       -> {"result":{...},"ms":N} or {"error":"...","ms":N}
//   {"op":"call",...,"progress":true}               -> also {"progress":[{progress,total,message}]}
//   {"op":"call",...,"cancel_after_ms":MS}          -> {"outcome":"cancelled"|"completed", ...}
//   {"op":"call",...,"cancel_after_progress":N}     -> the same, cancelled at the Nth progress
//   {"op":"sleep","ms":MS}                          -> {}
//   {"op":"until_ok","within_ms":MS,"step":STEP}    -> STEP's outcome, STEP run again every
//                                                      100 ms while it fails, for up to MS
// A failed step gives {"error":"..."} and the run goes on. --elicit answers every
// elicitation/create with that ElicitResult ({"action":"accept","content":{...}}); --sample
// answers sampling/createMessage with that text. Without them the client declares neither
// capability. Prints one JSON line: {"sdk","protocolVersion","server","steps":[...],"errors"}.

const argv = process.argv.slice(2);
const opt = { sdk: 'v2', era: 'auto', elicit: null, sample: null, url: null, stdio: null };
const steps = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const next = () => {
    if (i + 1 >= argv.length) usage(`${a} needs a value`);
    return argv[++i];
  };
  if (a === '--sdk') opt.sdk = next();
  else if (a === '--era') opt.era = next();
  else if (a === '--elicit') opt.elicit = JSON.parse(next());
  else if (a === '--sample') opt.sample = next();
  else if (a === '--url') opt.url = next();
  else if (a === '--stdio') opt.stdio = JSON.parse(next());
  else steps.push(JSON.parse(a));
}
if (!opt.url === !opt.stdio) usage('give exactly one of --url and --stdio');
if (!['v1', 'v2'].includes(opt.sdk)) usage('--sdk is v1 or v2');

function usage(why) {
  console.error(`gateway_client.mjs: ${why}`);
  process.exit(2);
}

const capabilities = {};
if (opt.elicit) capabilities.elicitation = { form: {} };
if (opt.sample) capabilities.sampling = {};
const info = { name: `toolwright-gateway-test-${opt.sdk}`, version: '1.0.0' };
const errors = [];

let client;
let transport;
if (opt.sdk === 'v1') {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const types = await import('@modelcontextprotocol/sdk/types.js');
  client = new Client(info, { capabilities });
  if (opt.elicit) client.setRequestHandler(types.ElicitRequestSchema, async () => opt.elicit);
  if (opt.sample) {
    client.setRequestHandler(types.CreateMessageRequestSchema, async () => sampled());
  }
  if (opt.url) {
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    transport = new StreamableHTTPClientTransport(new URL(opt.url));
  } else {
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    transport = new StdioClientTransport(stdioParams());
  }
} else {
  const v2 = await import('@modelcontextprotocol/client');
  const mode = { auto: 'auto', legacy: 'legacy', modern: { pin: '2026-07-28' } }[opt.era];
  if (!mode) usage('--era is auto, modern or legacy');
  client = new v2.Client(info, { capabilities, versionNegotiation: { mode } });
  if (opt.elicit) client.setRequestHandler('elicitation/create', async () => opt.elicit);
  if (opt.sample) client.setRequestHandler('sampling/createMessage', async () => sampled());
  if (opt.url) {
    transport = new v2.StreamableHTTPClientTransport(new URL(opt.url));
  } else {
    const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
    transport = new StdioClientTransport(stdioParams());
  }
}
client.onerror = (e) => errors.push(String(e));
// v1 keeps the negotiated version only inside its HTTP transport: catch it on the way.
let v1Version = null;
if (opt.sdk === 'v1') {
  const set = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    v1Version = v;
    set?.(v);
  };
}

function stdioParams() {
  return { command: opt.stdio[0], args: opt.stdio.slice(1), env: { ...process.env }, stderr: 'inherit' };
}

function sampled() {
  return { role: 'assistant', content: { type: 'text', text: opt.sample }, model: 'fixed-answer' };
}

function message(e) {
  const code = e && typeof e.code === 'number' ? ` (${e.code})` : '';
  return `${e && e.message ? e.message : String(e)}${code}`;
}

async function run(step) {
  switch (step.op) {
    case 'list': {
      const tools = [];
      let cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined);
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return { tools };
    }
    case 'sleep':
      await new Promise((r) => setTimeout(r, step.ms));
      return {};
    case 'until_ok': {
      const deadline = Date.now() + step.within_ms;
      for (;;) {
        const out = await run(step.step);
        const failed = out.error !== undefined || (out.result && out.result.isError === true);
        if (!failed || Date.now() > deadline) return out;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    case 'call': {
      const progress = [];
      const options = { timeout: step.timeout_ms ?? 60000 };
      const cancels = step.cancel_after_ms !== undefined || step.cancel_after_progress !== undefined;
      const abort = new AbortController();
      if (step.progress || cancels) {
        options.onprogress = (p) => {
          progress.push({ progress: p.progress, total: p.total, message: p.message });
          if (step.cancel_after_progress !== undefined && progress.length >= step.cancel_after_progress) {
            abort.abort('cancelled by the test');
          }
        };
      }
      const params = { name: step.name, arguments: step.arguments ?? {} };
      const started = Date.now();
      if (!cancels) {
        try {
          const result = await client.callTool(params, ...(opt.sdk === 'v1' ? [undefined] : []), options);
          return options.onprogress ? { result, progress, ms: Date.now() - started } : { result, ms: Date.now() - started };
        } catch (e) {
          return { error: message(e), ms: Date.now() - started };
        }
      }
      options.signal = abort.signal;
      const timer = setTimeout(() => abort.abort('cancelled by the test'), step.cancel_after_ms ?? 60000);
      try {
        const result = await client.callTool(params, ...(opt.sdk === 'v1' ? [undefined] : []), options);
        clearTimeout(timer);
        return { outcome: 'completed', result, progress, ms: Date.now() - started };
      } catch (e) {
        clearTimeout(timer);
        const outcome = abort.signal.aborted ? 'cancelled' : 'error';
        return { outcome, error: message(e), progress, ms: Date.now() - started };
      }
    }
    default:
      throw new Error(`unknown op ${step.op}`);
  }
}

let out;
try {
  await client.connect(transport);
  const protocolVersion =
    opt.sdk === 'v1' ? v1Version : client.getNegotiatedProtocolVersion();
  const results = [];
  for (const step of steps) {
    try {
      results.push(await run(step));
    } catch (e) {
      results.push({ error: message(e) });
    }
  }
  out = { sdk: opt.sdk, protocolVersion: protocolVersion ?? null, server: client.getServerVersion() ?? null, steps: results, errors };
} catch (e) {
  out = { sdk: opt.sdk, connectError: message(e), errors };
}
try {
  if (transport.terminateSession && transport.sessionId) await transport.terminateSession();
} catch {
  // the server may be gone already
}
await client.close().catch(() => {});
console.log(JSON.stringify(out));
process.exit(0);
