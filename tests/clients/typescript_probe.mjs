// What the TypeScript SDK's client makes of each case's bytes, run with `node --input-type=module
// -e` in the built TypeScript reference server's folder (its node_modules hold the SDK).
// argv[1]: a JSON file {name: hex}. Prints {name: {carrier: [outcome, value]}}: outcome
// "reads" (value: String(result.x)) or "rejects" (value: the error).
// - line: ReadBuffer, the SDK's stdio buffer (@modelcontextprotocol/server bundles the same
//   core-internal/src/shared/stdio.ts as @modelcontextprotocol/client's StdioClientTransport):
//   readMessage() returns null for a line JSON.parse refuses (skipped), throws on a schema error.
// - body: fetch's Response.json() and JSONRPCMessageSchema, as StreamableHTTPClientTransport
//   reads an application/json answer.
// - event: TextDecoderStream, the event's data lines, JSON.parse and JSONRPCMessageSchema, as
//   the transport reads a text/event-stream answer.
import { readFileSync } from "node:fs";
import { ReadBuffer } from "@modelcontextprotocol/server";
import { JSONRPCMessageSchema } from "@modelcontextprotocol/core";

const cases = JSON.parse(readFileSync(process.argv[1], "utf8"));
const read = (message) => ["reads", String(message?.result?.x)];
const refused = (error) => ["rejects", String(error).slice(0, 200)];

async function line(bytes) {
  const buffer = new ReadBuffer();
  buffer.append(Buffer.concat([bytes, Buffer.from("\n")]));
  const message = buffer.readMessage();
  return message === null ? ["rejects", "skipped by ReadBuffer"] : read(message);
}

async function body(bytes) {
  return read(JSONRPCMessageSchema.parse(await new Response(bytes).json()));
}

async function event(bytes) {
  const stream = new Response(Buffer.concat([Buffer.from("event: message\ndata: "), bytes,
                                             Buffer.from("\n\n")])).body;
  let text = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  const data = text.split("\n").filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
  return read(JSONRPCMessageSchema.parse(JSON.parse(data)));
}

const out = {};
for (const [name, hex] of Object.entries(cases)) {
  const bytes = Buffer.from(hex, "hex");
  out[name] = {};
  for (const [carrier, probe] of Object.entries({ line, body, event })) {
    try {
      out[name][carrier] = await probe(bytes);
    } catch (error) {
      out[name][carrier] = refused(error);
    }
  }
}
console.log(JSON.stringify(out));
