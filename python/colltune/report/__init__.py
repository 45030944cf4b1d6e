"""Stage 8, the report: the HTML report assembled from every stage's section, the dashboard,
the benchmark suite, and the `report` and `serve` verbs."""
