"""How mcpstart talks to a server: the transport interface (base) and its stdio transport
(spawn, pipes, line framing), JSON-RPC, the session (requests, waits, shutdown) and the
process tree."""
