"""Stage 1, the probe: caches, sharing, memory and communication layers of the machine
(machine.json), with its schema and its report section."""
