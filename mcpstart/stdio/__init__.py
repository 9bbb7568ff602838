"""The stdio transport: spawn, pipes, line framing, JSON-RPC, waits, process tree, shutdown."""
