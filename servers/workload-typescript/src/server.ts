// The four tools of the Streamable HTTP MCP benchmark (docs/workload-servers.md) over stdio,
// or with --port PORT over Streamable HTTP at http://127.0.0.1:PORT/mcp, served as
// servers/typescript-http serves reverse_text (node:http; 2026-07-28 requests to the SDK's
// per-request handler, the handshake era to one sessionful transport per Mcp-Session-Id).
// Typed inputs and outputs: zod inputSchema and outputSchema, the result both as
// structuredContent and as its JSON text, as McpServer.registerTool's example shows.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import {
    createMcpHandler,
    isInitializeRequest,
    isLegacyRequest,
    McpServer,
    WebStandardStreamableHTTPServerTransport
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

function structured<T extends Record<string, unknown>>(output: T) {
    return { content: [{ type: 'text' as const, text: JSON.stringify(output) }], structuredContent: output };
}

function fibonacci(n: number): number {
    return n <= 1 ? n : fibonacci(n - 1) + fibonacci(n - 2);
}

function upperCase(value: unknown): unknown {
    if (typeof value === 'string') return value.toUpperCase();
    if (Array.isArray(value)) return value.map(upperCase);
    if (value !== null && typeof value === 'object') {
        return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, upperCase(item)]));
    }
    return value;
}

function createMcpServer(): McpServer {
    const server = new McpServer({ name: 'workload', version: '1.0.0' });

    server.registerTool(
        'calculate_fibonacci',
        {
            description: 'Compute the n-th Fibonacci number recursively (CPU-bound).',
            inputSchema: z.object({ n: z.number().int().min(0).max(40).describe('position in the Fibonacci sequence') }),
            outputSchema: z.object({ input: z.number(), result: z.number() })
        },
        async ({ n }) => structured({ input: n, result: fibonacci(n) })
    );

    server.registerTool(
        'fetch_external_data',
        {
            description: 'GET a URL and return its status and body (I/O-bound).',
            inputSchema: z.object({ endpoint: z.string().describe('the URL to GET') }),
            outputSchema: z.object({ url: z.string(), status_code: z.number(), response_time_ms: z.number(), body: z.string() })
        },
        async ({ endpoint }) => {
            const start = performance.now();
            const response = await fetch(endpoint);
            const body = await response.text();
            return structured({ url: endpoint, status_code: response.status, response_time_ms: performance.now() - start, body });
        }
    );

    server.registerTool(
        'process_json_data',
        {
            description: 'Upper-case every string value of a JSON object.',
            inputSchema: z.object({ data: z.record(z.string(), z.unknown()).describe('a JSON object; its string values are upper-cased') }),
            outputSchema: z.object({ original_keys: z.array(z.string()), transformed_data: z.record(z.string(), z.unknown()) })
        },
        async ({ data }) =>
            structured({ original_keys: Object.keys(data), transformed_data: upperCase(data) as Record<string, unknown> })
    );

    server.registerTool(
        'simulate_database_query',
        {
            description: 'Simulate a database query: wait delay_ms without blocking (I/O-bound).',
            inputSchema: z.object({
                query: z.string().describe('the query text (not run)'),
                delay_ms: z.number().int().min(0).max(5000).describe('how long the simulated query takes')
            }),
            outputSchema: z.object({ query: z.string(), delay_ms: z.number() })
        },
        async ({ query, delay_ms }) => {
            await sleep(delay_ms);
            return structured({ query, delay_ms });
        }
    );

    return server;
}

const modern = createMcpHandler(createMcpServer, { legacy: 'reject' });
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
    return (await isLegacyRequest(request)) ? legacy(request) : modern.fetch(request);
}

const { values } = parseArgs({ options: { port: { type: 'string' } } });
if (values.port === undefined) {
    serveStdio(createMcpServer);
} else {
    const nodeHandler = toNodeHandler({ fetch: serve });
    const validateHost = localhostHostValidation();
    const validateOrigin = localhostOriginValidation();
    createServer((req, res) => {
        if (!validateHost(req, res) || !validateOrigin(req, res)) return;
        void nodeHandler(req, res);
    }).listen(Number(values.port), '127.0.0.1');
}
