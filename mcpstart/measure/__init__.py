"""What is measured: probes, memory, footprint, statistics, the machine, and the run itself."""
