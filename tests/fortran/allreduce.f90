! EP_Allreduce over endpoints (OpenMP threads, 2 or 3 per process): MPI_SUM on a real
! array, on non-contiguous sections (send and receive), with EP_IN_PLACE, and
! EP_Iallreduce into a section completed by EP_Wait.
program allreduce
  use mpi_f08
  use ep_f08
  use omp_lib
  use ep_ftest
  implicit none

  call run_endpoints('allreduce', 3, 2, endpoint)

contains

  subroutine endpoint(comm, nfail)
    type(EP_Comm), intent(inout) :: comm
    integer, intent(inout) :: nfail
    integer, parameter :: n = 7
    integer :: rank, size, ierr, k
    real :: x(n), y(n), expect(n)
    real, asynchronous :: a(3, n), b(2, n)
    type(EP_Request) :: req

    call EP_Comm_rank(comm, rank)
    call EP_Comm_size(comm, size)
    do k = 1, n
      x(k) = rank + k
      ! sum over ranks r of (r + k)
      expect(k) = real(size * (size - 1) / 2 + k * size)
    end do

    y = -1
    call EP_Allreduce(x, y, n, MPI_REAL, MPI_SUM, comm, ierr)
    call check(ierr == EP_SUCCESS .and. all(y == expect), 'Allreduce', rank, nfail)

    ! Rows of 2-D arrays: stride 3 (send) and 2 (receive) elements.
    a = -5
    a(2, :) = x
    b = -7
    call EP_Allreduce(a(2, :), b(1, :), n, MPI_REAL, MPI_SUM, comm, ierr)
    call check(ierr == EP_SUCCESS .and. all(b(1, :) == expect), &
               'Allreduce of sections', rank, nfail)
    call check(all(b(2, :) == -7) .and. all(a(1, :) == -5) .and. all(a(2, :) == x), &
               'Allreduce left the rest alone', rank, nfail)

    y = x
    call EP_Allreduce(EP_IN_PLACE, y, n, MPI_REAL, MPI_SUM, comm)
    call check(all(y == expect), 'Allreduce in place', rank, nfail)

    b = -7
    call EP_Iallreduce(x, b(2, :), n, MPI_REAL, MPI_MAX, comm, req, ierr)
    call check(ierr == EP_SUCCESS, 'Iallreduce', rank, nfail)
    call EP_Wait(req, EP_STATUS_IGNORE, ierr)
    do k = 1, n
      call check(b(2, k) == real(size - 1 + k), 'Iallreduce into a section', rank, nfail)
    end do
    call check(all(b(1, :) == -7), 'Iallreduce left the other row alone', rank, nfail)
    call EP_Comm_free(comm)
  end subroutine endpoint
end program allreduce
