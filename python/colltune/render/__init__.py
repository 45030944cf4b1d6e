"""The report's HTML and figures: one public API for every stage's report section."""
