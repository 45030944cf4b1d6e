! The collectives test program through mpif.h (tests/fortran/collectives.inc).
program coll_mpif
  implicit none
  include 'mpif.h'
#define IERR , ierr
#define SOURCE(s) s(MPI_SOURCE)
#define SOURCES(s, k) s(MPI_SOURCE, k)
  integer :: req, reqs(8), msg, btype
  integer :: stat(MPI_STATUS_SIZE), stats(MPI_STATUS_SIZE, 8)
#include "collectives.inc"
end program coll_mpif
