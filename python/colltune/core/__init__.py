"""Shared by every stage: sizes and units, argument parsing, files and signals, the
operations, MPI builds and launching, test-bed hosts, progress, the machine fingerprint."""
