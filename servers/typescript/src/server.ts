import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

function createServer(): McpServer {
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

serveStdio(createServer);
