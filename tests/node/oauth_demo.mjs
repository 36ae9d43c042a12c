// The official TypeScript SDK's example authorization server (its in-memory demo provider:
// dynamic client registration, authorization code with PKCE, opaque access tokens and an
// RFC 7662 introspection endpoint), and the SDK's client with an OAuth provider in front.
//
//   node oauth_demo.mjs server PORT        the authorization server on 127.0.0.1:PORT;
//                                          prints "ready" once it listens
//   node oauth_demo.mjs client MCP_URL     the client: registers, is sent to /authorize
//                                          (which approves at once), follows the redirect
//                                          by hand, finishes the flow, connects, lists the
//                                          tools and calls add; prints one JSON line
import { setupAuthServer } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [mode, arg] = process.argv.slice(2);

if (mode === 'server') {
  const authServerUrl = new URL(`http://127.0.0.1:${arg}`);
  // strictResource off: the resource server (toolwright) checks the audience itself.
  setupAuthServer({ authServerUrl, mcpServerUrl: new URL('http://127.0.0.1/mcp'), strictResource: false });
  // setupAuthServer listens asynchronously; wait for the metadata to answer.
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(new URL('/.well-known/oauth-authorization-server', authServerUrl));
      if (r.ok) break;
    } catch { /* not yet */ }
    await new Promise((done) => setTimeout(done, 50));
  }
  console.log('ready');
} else if (mode === 'client') {
  const redirectUrl = 'http://127.0.0.1:9/callback';
  let info; let tokens; let verifier; let code;
  const provider = {
    get redirectUrl() { return redirectUrl; },
    get clientMetadata() {
      return {
        client_name: 'toolwright-oauth-test',
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
    },
    clientInformation: () => info,
    saveClientInformation: (i) => { info = i; },
    tokens: () => tokens,
    saveTokens: (t) => { tokens = t; },
    saveCodeVerifier: (v) => { verifier = v; },
    codeVerifier: () => verifier,
    // The demo approves at once and redirects with the code; follow it by hand.
    redirectToAuthorization: async (url) => {
      const r = await fetch(url, { redirect: 'manual' });
      const location = r.headers.get('location');
      if (!location) throw new Error(`no redirect from /authorize (HTTP ${r.status})`);
      code = new URL(location).searchParams.get('code');
    },
  };
  const url = new URL(arg);
  const connect = async () => {
    const client = new Client({ name: 'toolwright-oauth-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await client.connect(transport);
    return { client, transport };
  };
  let first = 'connected';
  let c;
  try {
    c = await connect();
  } catch (e) {
    if (!(e instanceof UnauthorizedError) || !code) throw e;
    first = 'unauthorized, then authorized';
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await transport.finishAuth(code);
    c = await connect();
  }
  const { tools } = await c.client.listTools();
  const result = await c.client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  await c.client.close();
  console.log(JSON.stringify({
    first,
    token: tokens?.access_token,
    scope: tokens?.scope,
    tools: tools.map((t) => t.name),
    result,
  }));
} else {
  console.error('usage: node oauth_demo.mjs server PORT | client MCP_URL');
  process.exit(2);
}
