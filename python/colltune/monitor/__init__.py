"""Stage 6, the message monitor: an MPI program run under the drop-in's monitor and its report
section."""
