! The collectives test program through `use mpi` (tests/fortran/collectives.inc).
program coll_mpi
  use mpi
  implicit none
#define IERR , ierr
#define SOURCE(s) s(MPI_SOURCE)
#define SOURCES(s, k) s(MPI_SOURCE, k)
  integer :: req, reqs(8), msg, btype
  integer :: stat(MPI_STATUS_SIZE), stats(MPI_STATUS_SIZE, 8)
#include "collectives.inc"
end program coll_mpi
