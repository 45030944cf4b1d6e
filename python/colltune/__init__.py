"""colltune: MPI collectives measured, modelled, tuned and monitored."""

__version__ = "0.1.0"
