! Halo exchange over endpoints (OpenMP threads, 2 or 3 per process) with array sections:
! each endpoint owns a(0:m+1, 0:n+1); endpoints form a periodic ring in the first
! dimension.  Rows a(1, 1:n) and a(m, 1:n) are strided sections (non-contiguous) moved
! with EP_Irecv/EP_Isend and EP_Waitall, EP_Testall or EP_Wait; columns a(1:m, 1) and a(1:m, n) (contiguous) and the
! strided column section a(1:m:2, n) go with EP_Sendrecv to the endpoint itself and the
! neighbours.
program halo
  use mpi_f08
  use ep_f08
  use omp_lib
  use ep_ftest
  implicit none

  call run_endpoints('halo', 2, 3, endpoint)

contains

  ! The value every endpoint stores at (i, j) of its interior.
  pure double precision function val(rank, i, j)
    integer, intent(in) :: rank, i, j
    val = rank * 10000 + i * 100 + j
  end function val

  subroutine endpoint(comm, nfail)
    type(EP_Comm), intent(inout) :: comm
    integer, intent(inout) :: nfail
    integer, parameter :: m = 6, n = 9
    double precision, asynchronous :: a(0:m + 1, 0:n + 1)
    double precision :: col(m)
    integer :: rank, size, up, down, ierr, i, j, step
    logical :: flag
    type(EP_Request) :: reqs(4)

    call EP_Comm_rank(comm, rank)
    call EP_Comm_size(comm, size)
    up = mod(rank + size - 1, size)
    down = mod(rank + 1, size)

    do step = 1, 3  ! repeated: the pending temporaries are reused and released each time
      a = -1
      do j = 1, n
        do i = 1, m
          a(i, j) = val(rank, i, j) + step
        end do
      end do
      ! Rows: my first row goes up (arrives in up's row m+1), my last row goes down.
      call EP_Irecv(a(0, 1:n), n, MPI_DOUBLE_PRECISION, up, 1, comm, reqs(1))
      call EP_Irecv(a(m + 1, 1:n), n, MPI_DOUBLE_PRECISION, down, 2, comm, reqs(2))
      call EP_Isend(a(m, 1:n), n, MPI_DOUBLE_PRECISION, down, 1, comm, reqs(3))
      call EP_Isend(a(1, 1:n), n, MPI_DOUBLE_PRECISION, up, 2, comm, reqs(4))
      select case (step)  ! each way to complete copies the received rows out
      case (1)
        call EP_Waitall(4, reqs, EP_STATUSES_IGNORE, ierr)
      case (2)
        flag = .false.
        do while (.not. flag)
          call EP_Testall(4, reqs, flag, EP_STATUSES_IGNORE, ierr)
        end do
      case default
        do i = 4, 1, -1
          call EP_Wait(reqs(i), EP_STATUS_IGNORE, ierr)
        end do
      end select
      call check(ierr == EP_SUCCESS .and. all(reqs == EP_REQUEST_NULL), 'completion', &
                 rank, nfail)
      do j = 1, n
        call check(a(0, j) == val(up, m, j) + step, 'halo row from up', rank, nfail)
        call check(a(m + 1, j) == val(down, 1, j) + step, 'halo row from down', rank, nfail)
      end do
      call check(a(0, 0) == -1 .and. a(0, n + 1) == -1 .and. a(m + 1, 0) == -1, &
                 'corners untouched', rank, nfail)
      do j = 1, n
        do i = 1, m
          call check(a(i, j) == val(rank, i, j) + step, 'interior untouched', rank, nfail)
        end do
      end do
    end do

    ! Periodic in the second dimension within the endpoint: columns to itself.
    call EP_Sendrecv(a(1:m, n), m, MPI_DOUBLE_PRECISION, rank, 3, &
                     a(1:m, 0), m, MPI_DOUBLE_PRECISION, rank, 3, comm, EP_STATUS_IGNORE, ierr)
    call check(ierr == EP_SUCCESS .and. all(a(1:m, 0) == a(1:m, n)), &
               'column to itself', rank, nfail)
    ! A strided column section to the neighbour below, received into a contiguous array.
    col = 0
    call EP_Sendrecv(a(1:m:2, n), m / 2, MPI_DOUBLE_PRECISION, down, 4, &
                     col, m / 2, MPI_DOUBLE_PRECISION, up, 4, comm, EP_STATUS_IGNORE, ierr)
    do i = 1, m / 2
      call check(col(i) == val(up, 2 * i - 1, n) + 3, 'strided column from up', rank, nfail)
    end do
    call check(all(col(m / 2 + 1:) == 0), 'strided column length', rank, nfail)
    call EP_Comm_free(comm)
  end subroutine endpoint
end program halo
