// The independent side of benchmarks/load_check.py: autocannon (npm) driven through its
// documented programmatic API, on the scenarios of mcpstart's load engine
// (mcpstart/measure/locust_mcp.py says what each does):
//   "session": per connection, in a loop, POST initialize, POST notifications/initialized,
//              POST tools/call, DELETE (autocannon's `requests` sequence: the session id of
//              initialize's answer is kept in the connection's context);
//   "calls":   tools/call on one session per connection, opened before the timed window:
//              one autocannon instance of one connection per session, all in this process
//              (a request sequence rebuilt per request, the way to vary a header per
//              connection, halves autocannon's rate); each connection has one call in flight,
//              so one JSON-RPC id per session never overlaps itself.
//
// Usage: node load_check.js AUTOCANNON_DIR '{"url", "scenario", "connections", "duration_s"}'
// Before the timed window one tools/call is checked to answer the reversed text (a wrong
// answer exits 1); inside it no body is read but initialize's (reading every body halves
// autocannon's rate). Prints one JSON line: {requests, rps, non_2xx, errors, timeouts,
// duration_s, autocannon}.
'use strict'

const path = require('path')
const [dir, configText] = process.argv.slice(2)
const autocannon = require(path.join(dir, 'node_modules', 'autocannon'))
const version = require(path.join(dir, 'node_modules', 'autocannon', 'package.json')).version
const config = JSON.parse(configText)

const TEXT = 'mcpstart load 16b'
const REVERSED = [...TEXT].reverse().join('')
const BASE = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'load-check', version: '1' } }
})
const INITIALIZED = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })
const call = (id) => JSON.stringify({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'reverse_text', arguments: { text: TEXT } }
})

function header (headers, name) {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name)
  return key === undefined ? undefined : headers[key]
}

function sessionHeaders (session) {
  return { ...BASE, 'mcp-session-id': session.id, 'mcp-protocol-version': session.version }
}


function opened (status, body, headers) {
  const version = /"protocolVersion"\s*:\s*"([^"]+)"/.exec(String(body))
  return { id: header(headers, 'mcp-session-id'), version: version ? version[1] : '2025-11-25' }
}

async function openSession () {
  const answer = await fetch(config.url, { method: 'POST', headers: BASE, body: INITIALIZE })
  const headers = Object.fromEntries(answer.headers.entries())
  const session = opened(answer.status, await answer.text(), headers)
  await (await fetch(config.url, { method: 'POST', headers: sessionHeaders(session), body: INITIALIZED })).text()
  return session
}

async function check () {
  const session = await openSession()
  const answer = await fetch(config.url, { method: 'POST', headers: sessionHeaders(session), body: call(2) })
  const body = await answer.text()
  if (!answer.ok || !body.includes(REVERSED)) throw new Error(`tools/call answered ${answer.status}: ${body.slice(0, 200)}`)
}

async function session (at) {
  return {
    requests: [
      { method: 'POST', path: at, headers: BASE, body: INITIALIZE,
        onResponse: (status, body, context, headers) => { context.session = opened(status, body, headers) } },
      { method: 'POST', path: at, body: INITIALIZED,
        setupRequest: (req, context) => ({ ...req, headers: sessionHeaders(context.session) }) },
      { method: 'POST', path: at, body: call(2),
        setupRequest: (req, context) => ({ ...req, headers: sessionHeaders(context.session) }) },
      { method: 'DELETE', path: at,
        setupRequest: (req, context) => ({ ...req, headers: sessionHeaders(context.session) }) }
    ]
  }
}

async function main () {
  await check()
  const url = new URL(config.url)
  const common = { url: config.url, duration: config.duration_s, timeout: config.timeout_s || 5 }
  let runs
  if (config.scenario === 'session') {
    runs = [{ ...common, connections: config.connections, ...await session(url.pathname + url.search) }]
  } else {
    runs = []
    for (let i = 0; i < config.connections; i++) {
      runs.push({ ...common, connections: 1, method: 'POST', headers: sessionHeaders(await openSession()), body: call(2) })
    }
  }
  const results = await Promise.all(runs.map((options) => autocannon(options)))
  const sum = (key) => results.reduce((total, r) => total + key(r), 0)
  process.stdout.write(JSON.stringify({
    requests: sum((r) => r.requests.total), rps: sum((r) => r.requests.total / r.duration),
    non_2xx: sum((r) => r.non2xx), errors: sum((r) => r.errors), timeouts: sum((r) => r.timeouts),
    duration_s: Math.max(...results.map((r) => r.duration)), autocannon: version
  }) + '\n')
}

main().catch((err) => { console.error(err); process.exit(1) })
