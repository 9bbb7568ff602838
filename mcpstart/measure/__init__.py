"""What is measured: the client, cold starts, the warm session, memory, footprint, statistics, the machine, and the run itself."""
