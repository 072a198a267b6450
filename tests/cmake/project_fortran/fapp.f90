! A Fortran application built by CMake against the installed package: ep::ep_fortran must
! bring ep_f08 (module and library), libep and mpi_f08 along.  One endpoint per process:
! its rank, the size, and an EP_Allreduce of the ranks.
program fapp
  use mpi_f08
  use ep_f08
  implicit none
  integer :: provided, ierr, rank, size, total
  type(EP_Comm) :: comms(1)
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided)
  call EP_Init(ierr)
  if (ierr /= EP_SUCCESS) error stop 'EP_Init failed'
  call EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, comms, ierr)
  if (ierr /= EP_SUCCESS) error stop 'EP_Comm_create_endpoints failed'
  call EP_Comm_rank(comms(1), rank)
  call EP_Comm_size(comms(1), size)
  call EP_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, comms(1), ierr)
  if (ierr /= EP_SUCCESS) error stop 'EP_Allreduce failed'
  print '(a,i0,a,i0)', 'fapp: size ', size, ', sum of ranks ', total
  call EP_Comm_free(comms(1))
  call EP_Finalize()
  call MPI_Finalize()
end program fapp
