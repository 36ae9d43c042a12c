// Benchmark peer: the official TypeScript MCP SDK (@modelcontextprotocol/sdk 1.32.2)
// serving one `add` tool, written the way the SDK's README and examples do it:
// `McpServer.registerTool` with zod shapes for input and output schemas.
//
// Configuration:
// * stdio: `StdioServerTransport` (the only stdio transport the SDK ships).
// * HTTP: `createMcpExpressApp()` (express, bound to 127.0.0.1 with its DNS rebinding
//   protection) and one `StreamableHTTPServerTransport` + `McpServer` per session,
//   as in the SDK's `jsonResponseStreamableHttp` example, with `enableJsonResponse: true`
//   (plain JSON answers instead of one SSE stream per POST: the SDK's faster mode).
//   Node's http server sets TCP_NODELAY on accepted sockets by default (Node >= 18).
//
// Usage: `node server.mjs` (stdio) | `node server.mjs --http 127.0.0.1:PORT`.
// With BENCH_EXTRA_TOOLS=N it registers N more tools (`bench_tool_0000`...) with the same
// schemas, for the tools/list figure.

import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

const EXTRA_TOOLS = Number.parseInt(process.env.BENCH_EXTRA_TOOLS ?? '0', 10) || 0;

const inputSchema = {
  a: z.number().describe('Left operand'),
  b: z.number().describe('Right operand'),
};
const outputSchema = { result: z.number().describe('The sum') };

async function add({ a, b }) {
  const structuredContent = { result: a + b };
  return {
    content: [{ type: 'text', text: JSON.stringify(structuredContent) }],
    structuredContent,
  };
}

function buildServer() {
  const server = new McpServer({ name: 'bench-peer-ts', version: '0.0.0' });
  server.registerTool(
    'add',
    { description: 'Add two numbers and return their sum.', inputSchema, outputSchema },
    add,
  );
  for (let i = 0; i < EXTRA_TOOLS; i++) {
    const name = `bench_tool_${String(i).padStart(4, '0')}`;
    server.registerTool(
      name,
      {
        description: `Synthetic benchmark tool number ${i}: adds two numbers.`,
        inputSchema,
        outputSchema,
      },
      add,
    );
  }
  return server;
}

async function serveStdio() {
  const server = buildServer();
  await server.connect(new StdioServerTransport());
}

function serveHttp(addr) {
  const sep = addr.lastIndexOf(':');
  const host = addr.slice(0, sep);
  const port = Number.parseInt(addr.slice(sep + 1), 10);
  const app = createMcpExpressApp({ host });
  const sessions = new Map();

  app.post('/mcp', async (req, res) => {
    try {
      const sessionId = req.headers['mcp-session-id'];
      const existing = sessionId ? sessions.get(sessionId) : undefined;
      if (existing) {
        await existing.handleRequest(req, res, req.body);
        return;
      }
      if (!sessionId && isInitializeRequest(req.body)) {
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: true,
          onsessioninitialized: (sid) => {
            sessions.set(sid, transport);
          },
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await buildServer().connect(transport);
        await transport.handleRequest(req, res, req.body);
        return;
      }
      const status = sessionId ? 404 : 400;
      res.status(status).json({
        jsonrpc: '2.0',
        error: { code: -32000, message: sessionId ? 'Session not found' : 'No valid session ID' },
        id: null,
      });
    } catch (error) {
      console.error('error handling MCP request:', error);
      if (!res.headersSent) {
        res.status(500).json({
          jsonrpc: '2.0',
          error: { code: -32603, message: 'Internal server error' },
          id: null,
        });
      }
    }
  });

  const endSession = async (req, res) => {
    const transport = sessions.get(req.headers['mcp-session-id']);
    if (!transport) {
      res.status(404).end();
      return;
    }
    await transport.handleRequest(req, res);
  };
  app.get('/mcp', endSession);
  app.delete('/mcp', endSession);

  const httpServer = app.listen(port, host, () => {
    console.error(`peer-ts listening on http://${host}:${port}/mcp`);
  });
  const stop = () => httpServer.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

const args = process.argv.slice(2);
const httpAt = args.indexOf('--http');
if (httpAt >= 0) {
  serveHttp(args[httpAt + 1] ?? '127.0.0.1:8000');
} else {
  await serveStdio();
}
