"""The dynamic task runtime's application: tiled Cholesky (`colltune cholesky`) and its report
section."""
