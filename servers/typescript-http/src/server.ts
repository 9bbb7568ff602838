// reverse-text over Streamable HTTP at http://127.0.0.1:PORT/mcp (PORT from --port), on
// node:http as the SDK's serving guide mounts it (docs/serving/http.md). 2026-07-28
// requests go to the SDK's per-request handler; handshake-era requests get one sessionful
// transport per Mcp-Session-Id, routed by isLegacyRequest as docs/serving/legacy-clients.md
// ("Keep a sessionful 2025 deployment running") and docs/serving/sessions-state-scaling.md
// show. createMcpHandler alone would serve the handshake era statelessly: no session id,
// and 405 for DELETE. Every layer that reads a body (the node adapter, the modern handler,
// isLegacyRequest, the sessionful transport) takes maxRequestBodySize, 4 MiB by default
// (answered 413); each is raised to 16 MiB, so the 5 MiB tool call the stdio server takes
// is taken here too.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import {
    createMcpHandler,
    isInitializeRequest,
    isLegacyRequest,
    McpServer,
    WebStandardStreamableHTTPServerTransport
} from '@modelcontextprotocol/server';
import * as z from 'zod/v4';

function createMcpServer(): McpServer {
    const server = new McpServer({ name: 'reverse-text', version: '1.0.0' });

    server.registerTool(
        'reverse_text',
        {
            description: 'Reverse text by Unicode code points.',
            inputSchema: z.object({ text: z.string() })
        },
        async ({ text }) => ({
            // Array.from splits a string by code points (not UTF-16 units).
            content: [{ type: 'text', text: Array.from(text).reverse().join('') }]
        })
    );

    return server;
}

const maxRequestBodySize = 16 * 1024 * 1024;
const modern = createMcpHandler(createMcpServer, { legacy: 'reject', maxRequestBodySize });
const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

function jsonRpcError(status: number, code: number, message: string): Response {
    return Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status });
}

async function legacy(request: Request): Promise<Response> {
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId) {
        const transport = sessions.get(sessionId);
        return transport ? transport.handleRequest(request) : jsonRpcError(404, -32001, 'Session not found');
    }
    const body: unknown = request.method === 'POST' ? await request.clone().json().catch(() => undefined) : undefined;
    if (!isInitializeRequest(body)) {
        return jsonRpcError(400, -32000, 'Bad Request: Session ID required');
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
        maxRequestBodySize,
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: id => {
            sessions.set(id, transport);
        }
    });
    transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await createMcpServer().connect(transport);
    return transport.handleRequest(request, { parsedBody: body });
}

async function serve(request: Request): Promise<Response> {
    if (new URL(request.url).pathname !== '/mcp') return new Response('Not Found', { status: 404 });
    return (await isLegacyRequest(request, undefined, { maxRequestBodySize })) ? legacy(request) : modern.fetch(request);
}

const { values } = parseArgs({ options: { port: { type: 'string' } } });
const nodeHandler = toNodeHandler({ fetch: serve }, { maxRequestBodySize });
const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();
createServer((req, res) => {
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    void nodeHandler(req, res);
}).listen(Number(values.port), '127.0.0.1');
