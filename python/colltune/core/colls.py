"""The collective operations colltune knows, as the C library numbers them."""

# Every operation, in the order of the C enum ct_coll.
COLLS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier")
# Which sizes mean what, for the tables.
SIZE_MEANING = {"bcast": "message", "reduce": "vector", "allreduce": "vector",
                "scatter": "block per rank", "gather": "block per rank",
                "allgather": "block per rank", "alltoall": "block per rank", "barrier": None}
# The operations that move one block per rank, and the reductions (8-byte elements).
MOVEMENT = ("scatter", "gather", "allgather", "alltoall")
REDUCTIONS = ("reduce", "allreduce")
