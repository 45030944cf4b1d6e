"""Stage 2, point-to-point costs (p2p.json): the measurement, its schema and its report section."""
