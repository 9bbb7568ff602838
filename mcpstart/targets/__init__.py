"""Where servers come from: build recipes and their builds, a command line, editor configs."""
