// The search workload's three tools (docs/workload-servers.md, "The search workload") over
// stdio, on the corpus folder given as --root DIR (written by ../corpus.py): search_docs ranks
// the pages by BM25 over the index the corpus ships (index.json, loaded before the server
// answers anything), read_file reads a file whose real path lies in the corpus folder,
// run_tests runs the corpus's test script (child_process.execFile) and returns the tail of its
// output. Typed inputs and outputs: zod inputSchema and outputSchema, the result both as
// structuredContent and as its JSON text, as McpServer.registerTool's example shows; a
// thrown error is the tool's error result.
import { execFile } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';

import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

// BM25's parameters: Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and
// Beyond" (2009), the values Lucene's BM25Similarity takes by default.
const K1 = 1.2;
const B = 0.75;

interface Doc {
    id: string;
    path: string;
    title: string;
    length: number;
}

/** index.json: the pages, and per term the flat list doc, tf, doc, tf, ... */
interface IndexFile {
    docs: Doc[];
    postings: Record<string, number[]>;
}

interface Hit {
    id: string;
    title: string;
    path: string;
    score: number;
}

class Index {
    readonly docs: Doc[];
    readonly terms = new Map<string, { idf: number; postings: number[] }>();
    /** k1 * (1 - b + b * length / average length), per page */
    readonly norm: Float64Array;

    constructor(file: IndexFile) {
        this.docs = file.docs;
        const n = file.docs.length;
        let total = 0;
        for (const doc of file.docs) total += doc.length;
        const average = total / n;
        this.norm = Float64Array.from(file.docs, doc => K1 * (1 - B + (B * doc.length) / average));
        for (const [term, postings] of Object.entries(file.postings)) {
            const df = postings.length / 2;
            this.terms.set(term, { idf: Math.log(1 + (n - df + 0.5) / (df + 0.5)), postings });
        }
    }

    /** The pages holding any of the query's terms, by BM25 score, highest first (ties by page
     * order), at most limit. Each distinct term is added in the query's order. */
    search(query: string, limit: number): Hit[] {
        const scores = new Map<number, number>();
        for (const term of new Set(tokens(query))) {
            const entry = this.terms.get(term);
            if (entry === undefined) continue;
            const { idf, postings } = entry;
            for (let i = 0; i + 1 < postings.length; i += 2) {
                const doc = postings[i]!;
                const tf = postings[i + 1]!;
                scores.set(doc, (scores.get(doc) ?? 0) + (idf * (tf * (K1 + 1))) / (tf + this.norm[doc]!));
            }
        }
        return [...scores]
            .sort(([a, sa], [b, sb]) => sb - sa || a - b)
            .slice(0, limit)
            .map(([doc, score]) => {
                const { id, title, path } = this.docs[doc]!;
                return { id, title, path, score };
            });
    }
}

/** Runs of ASCII letters and digits, lower-cased, as corpus.py splits the pages. */
function tokens(text: string): string[] {
    return text.split(/[^A-Za-z0-9]+/).filter(Boolean).map(word => word.toLowerCase());
}

function structured<T extends Record<string, unknown>>(output: T) {
    return { content: [{ type: 'text' as const, text: JSON.stringify(output) }], structuredContent: output };
}

const run = promisify(execFile);

/** stdout and exit code of `sh tests/run.sh FILTER` in the corpus folder. */
async function runTests(root: string, filter: string): Promise<{ stdout: string; code: number }> {
    try {
        const { stdout } = await run('sh', ['tests/run.sh', filter], { cwd: root, maxBuffer: 1 << 26 });
        return { stdout, code: 0 };
    } catch (error) {
        const failed = error as { stdout?: string; code?: unknown };
        if (typeof failed.code !== 'number') throw error;
        return { stdout: failed.stdout ?? '', code: failed.code };
    }
}

function createMcpServer(index: Index, root: string): McpServer {
    const server = new McpServer({ name: 'search', version: '1.0.0' });

    server.registerTool(
        'search_docs',
        {
            description: 'Search the documentation pages (BM25); the best hits first.',
            inputSchema: z.object({
                query: z.string().describe('words to look for'),
                limit: z.number().int().min(1).max(100).describe('the most hits to return')
            }),
            outputSchema: z.object({
                hits: z.array(z.object({ id: z.string(), title: z.string(), path: z.string(), score: z.number() }))
            })
        },
        async ({ query, limit }) => structured({ hits: index.search(query, limit) })
    );

    server.registerTool(
        'read_file',
        {
            description: 'Read a file of the corpus folder (no path outside it).',
            inputSchema: z.object({ path: z.string().describe("a file's path relative to the corpus folder") })
        },
        async ({ path }) => {
            const full = await realpath(resolve(root, path));
            if (!full.startsWith(root + sep)) throw new Error(`${path}: outside the corpus folder`);
            return { content: [{ type: 'text' as const, text: await readFile(full, 'utf8') }] };
        }
    );

    server.registerTool(
        'run_tests',
        {
            description: "Run the corpus's tests and return the tail of their output.",
            inputSchema: z.object({
                filter: z.string().describe('run the tests whose name holds this text (all when empty)'),
                tail_lines: z.number().int().min(1).max(1000).describe("how many of the output's last lines to return")
            }),
            outputSchema: z.object({ exit_code: z.number(), lines: z.number(), tail: z.string() })
        },
        async ({ filter, tail_lines }) => {
            const { stdout, code } = await runTests(root, filter);
            const lines = stdout === '' ? [] : stdout.replace(/\n$/, '').split('\n');
            return structured({ exit_code: code, lines: lines.length, tail: lines.slice(-tail_lines).join('\n') });
        }
    );

    return server;
}

const { values } = parseArgs({ options: { root: { type: 'string' } } });
if (values.root === undefined) throw new Error('usage: server.js --root DIR');
const root = realpathSync(values.root);
const index = new Index(JSON.parse(readFileSync(join(root, 'index.json'), 'utf8')) as IndexFile);
serveStdio(() => createMcpServer(index, root));
