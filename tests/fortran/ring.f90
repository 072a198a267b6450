! Ring over endpoints (OpenMP threads as endpoints, 2 or 3 per process): EP_Sendrecv of
! scalars with status checks, then Isend/Irecv/Waitall of arrays in both directions.
program ring
  use mpi_f08
  use ep_f08
  use omp_lib
  use ep_ftest
  implicit none

  call run_endpoints('ring', 2, 3, endpoint)

contains

  subroutine endpoint(comm, nfail)
    type(EP_Comm), intent(inout) :: comm
    integer, intent(inout) :: nfail
    integer, parameter :: n = 100
    integer :: rank, size, left, right, token, ierr, i
    type(EP_Status) :: status
    type(EP_Request) :: reqs(4)
    type(EP_Status) :: statuses(4)
    double precision :: sr(n), sl(n), fromleft(n), fromright(n)

    call EP_Comm_rank(comm, rank, ierr)
    call EP_Comm_size(comm, size)
    right = mod(rank + 1, size)
    left = mod(rank + size - 1, size)

    call EP_Sendrecv(rank * 10, 1, MPI_INTEGER, right, 7, token, 1, MPI_INTEGER, left, 7, &
                     comm, status, ierr)
    call check(ierr == EP_SUCCESS .and. token == left * 10, 'Sendrecv value', rank, nfail)
    call check(status%EP_SOURCE == left .and. status%EP_TAG == 7, 'Sendrecv status', rank, nfail)
    call EP_Sendrecv(rank, 1, MPI_INTEGER, left, 8, token, 1, MPI_INTEGER, right, &
                     EP_ANY_TAG, comm, EP_STATUS_IGNORE)
    call check(token == right, 'Sendrecv backwards', rank, nfail)

    do i = 1, n
      sr(i) = rank * 1000 + i
      sl(i) = -(rank * 1000 + i)
    end do
    call EP_Irecv(fromleft, n, MPI_DOUBLE_PRECISION, left, 1, comm, reqs(1))
    call EP_Irecv(fromright, n, MPI_DOUBLE_PRECISION, right, 2, comm, reqs(2))
    call EP_Isend(sr, n, MPI_DOUBLE_PRECISION, right, 1, comm, reqs(3))
    call EP_Isend(sl, n, MPI_DOUBLE_PRECISION, left, 2, comm, reqs(4))
    call EP_Waitall(4, reqs, statuses, ierr)
    call check(ierr == EP_SUCCESS, 'Waitall', rank, nfail)
    call check(all(reqs == EP_REQUEST_NULL), 'requests freed', rank, nfail)
    call check(statuses(1)%EP_SOURCE == left .and. statuses(2)%EP_SOURCE == right, &
               'Waitall statuses', rank, nfail)
    do i = 1, n
      call check(fromleft(i) == left * 1000 + i, 'array from left', rank, nfail)
      call check(fromright(i) == -(right * 1000 + i), 'array from right', rank, nfail)
    end do
    call EP_Comm_free(comm)
    call check(comm == EP_COMM_NULL, 'EP_Comm_free', rank, nfail)
  end subroutine endpoint
end program ring
