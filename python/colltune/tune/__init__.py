"""Stage 4, the tuner: search strategies, tuning tables (the C drop-in reads them), their export
to Open MPI and MPICH rule files, and the tuning report section."""

