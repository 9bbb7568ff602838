"""Where servers come from: build recipes and their builds (later: a command line, editor configs)."""
