"""How mcpstart talks to a server: the transport interface (base); stdio (spawn, pipes, line
framing) and Streamable HTTP (http: spawn with a port, POST/GET/DELETE; http1: HTTP/1.1
framing; sse: event streams); JSON-RPC, the session (requests, waits, shutdown) and the
process tree."""
