! EP_Allreduce over endpoints (OpenMP threads, 2 or 3 per process): MPI_SUM on a real
! array, on non-contiguous sections (send and receive), with EP_IN_PLACE, and
! EP_Iallreduce into a section completed by EP_Wait.
program allreduce
  use mpi_f08
  use ep_f08
  use omp_lib
  implicit none
  integer :: provided, wrank, nep, nfail, ierr
  type(EP_Comm), allocatable :: comms(:)

  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, wrank)
  call EP_Init(ierr)
  if (ierr /= EP_SUCCESS) error stop "EP_Init failed"
  nep = 3 - mod(wrank, 2)
  allocate(comms(nep))
  call EP_Comm_create_endpoints(MPI_COMM_WORLD, nep, MPI_INFO_NULL, comms, ierr)
  if (ierr /= EP_SUCCESS) error stop "EP_Comm_create_endpoints failed"
  nfail = 0
  !$omp parallel num_threads(nep) reduction(+:nfail)
  if (omp_get_num_threads() /= nep) nfail = nfail + 1
  call endpoint(comms(omp_get_thread_num() + 1), nfail)
  !$omp end parallel
  call EP_Finalize(ierr)
  if (nfail /= 0 .or. ierr /= EP_SUCCESS) then
    print '(a, i0, a, i0, a)', 'allreduce: process ', wrank, ': ', nfail, ' FAILED checks'
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  if (wrank == 0) print '(a)', 'allreduce: PASS'
  call MPI_Finalize()

contains

  subroutine check(ok, what, rank, nfail)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in) :: rank
    integer, intent(inout) :: nfail
    if (.not. ok) then
      nfail = nfail + 1
      print '(2a, i0, 2a)', 'allreduce', ': endpoint ', rank, ': FAILED: ', what
    end if
  end subroutine check

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
