"""The collective operations colltune knows, as the C library numbers them."""

# Every operation, in the order of the C enum ct_coll.
COLLS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier",
         "allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter_block",
         "reduce_scatter", "scan", "exscan")
# The eight classic operations: what `colltune tune` and `colltune run` tune by default and
# what the MPI libraries' rule files (`colltune export-rules`) can take.
CLASSIC = COLLS[:8]
# Which sizes mean what, for the tables. The v-variants are measured and tuned with
# even blocks (every count equal), what a size can say; the drop-in takes the real counts.
SIZE_MEANING = {"bcast": "message", "reduce": "vector", "allreduce": "vector",
                "scatter": "block per rank", "gather": "block per rank",
                "allgather": "block per rank", "alltoall": "block per rank", "barrier": None,
                "allgatherv": "block per rank", "alltoallv": "block per rank",
                "gatherv": "block per rank", "scatterv": "block per rank",
                "reduce_scatter_block": "block per rank", "reduce_scatter": "block per rank",
                "scan": "vector", "exscan": "vector"}
# The operations with one block per rank (buffers of N blocks somewhere), and the
# reductions (8-byte elements).
MOVEMENT = ("scatter", "gather", "allgather", "alltoall", "allgatherv", "alltoallv", "gatherv",
            "scatterv", "reduce_scatter_block", "reduce_scatter")
REDUCTIONS = ("reduce", "allreduce", "reduce_scatter_block", "reduce_scatter", "scan", "exscan")
