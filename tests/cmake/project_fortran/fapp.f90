! Uses ep_f08 (found through ep::ep_fortran's include directory), libep itself (EP_Wtime,
! through ep::ep) and mpi_f08 (MPI::MPI_Fortran): it builds only if ep::ep_fortran brings
! all three along.
program fapp
  use, intrinsic :: iso_c_binding, only: c_double
  use mpi_f08
  use ep_f08
  implicit none
  interface
    function ep_wtime() bind(C, name="EP_Wtime")
      import :: c_double
      real(c_double) :: ep_wtime
    end function ep_wtime
  end interface
  integer :: value, nprocs
  call MPI_Init()
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call ep_f08_standin(value)
  if (ep_wtime() <= 0.0_c_double) error stop 'EP_Wtime returned no time'
  print '(a,i0,a,i0)', 'fapp: stand-in ', value, ', world size ', nprocs
  call MPI_Finalize()
end program fapp
