! The collectives test program through `use mpi_f08` (tests/fortran/collectives.inc): handles
! of their own types, and ierror left out of the calls (OPTIONAL there).
program coll_f08
  use mpi_f08
  implicit none
#define IERR
#define SOURCE(s) s%MPI_SOURCE
#define SOURCES(s, k) s(k)%MPI_SOURCE
  type(MPI_Request) :: req, reqs(8)
  type(MPI_Message) :: msg
  type(MPI_Datatype) :: btype
  type(MPI_Status) :: stat, stats(8)
#include "collectives.inc"
end program coll_f08
