// The official TypeScript SDK's client (@modelcontextprotocol/sdk 1.32.2) with an OAuth
// provider in front, given one access token, for crates/cli/tests/it/auth_jwt_sdk.rs.
//
//   TW_TOKEN=... node jwt_client.mjs MCP_URL
//
// The token comes from the environment (empty or unset: none). The provider's tokens()
// returns it; the client is registered beforehand (a fixed client_id), so a 401 sends the
// SDK through discovery (the resource's metadata, then the authorization server's) to
// redirectToAuthorization, which only records the URL: no one approves here. On success the
// client lists the tools and calls add. Every HTTP request the SDK makes is recorded:
// [method, url, status, WWW-Authenticate].
// Prints one JSON line: {outcome, error_type, error, redirect, requests, tools, result}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const url = new URL(process.argv[2]);
const token = process.env.TW_TOKEN || undefined;
const redirectUrl = 'http://127.0.0.1:9/callback';
const seen = { outcome: 'ok', redirect: null, requests: [] };

const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: 'toolwright-jwt-test', redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' };
  },
  clientInformation: () => ({ client_id: 'test-client' }),
  saveClientInformation: () => {},
  tokens: () => (token ? { access_token: token, token_type: 'Bearer' } : undefined),
  saveTokens: () => { throw new Error('no token is issued here'); },
  saveCodeVerifier: () => {},
  codeVerifier: () => 'unused',
  redirectToAuthorization: async (authorizationUrl) => { seen.redirect = authorizationUrl.href; },
};

// Records each request the SDK sends, the status it got and the challenge, if any.
const recording = async (input, init) => {
  const r = await fetch(input, init);
  const target = typeof input === 'string' ? input : (input.href ?? input.url);
  seen.requests.push([init?.method ?? 'GET', target, r.status, r.headers.get('www-authenticate')]);
  return r;
};

const client = new Client({ name: 'toolwright-jwt-test', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recording });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  seen.tools = tools.map((t) => t.name);
  seen.result = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
} catch (e) {
  seen.outcome = e instanceof UnauthorizedError ? 'unauthorized' : 'error';
  seen.error_type = e?.constructor?.name;
  seen.error = String(e?.message ?? e);
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(seen));
