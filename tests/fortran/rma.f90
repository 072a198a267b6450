! One-sided epochs over endpoints (OpenMP threads, 2 or 3 per process):
! EP_Win_allocate + fence + EP_Put to the right neighbour + fence; EP_Get from the left
! neighbour into a non-contiguous section + fence; EP_Get into a section within
! EP_Win_lock/EP_Win_unlock; EP_Win_create on a Fortran array with
! EP_Accumulate (MPI_SUM) from every endpoint; window attributes.
program rma
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use ep_f08
  use omp_lib
  use ep_ftest
  implicit none

  call run_endpoints('rma', 3, 2, endpoint)

contains

  subroutine endpoint(comm, nfail)
    type(EP_Comm), intent(inout) :: comm
    integer, intent(inout) :: nfail
    integer, parameter :: n = 8
    integer(kind=MPI_ADDRESS_KIND), parameter :: zero = 0
    integer :: rank, size, left, right, ierr, i
    type(EP_Win) :: win, win2
    type(c_ptr) :: baseptr
    double precision, pointer :: w(:)
    double precision :: src(n)
    double precision, asynchronous :: g(3, n)
    integer, target :: sums(n)
    integer :: acc(n)
    integer(kind=MPI_ADDRESS_KIND) :: attr
    logical :: flag

    call EP_Comm_rank(comm, rank)
    call EP_Comm_size(comm, size)
    right = mod(rank + 1, size)
    left = mod(rank + size - 1, size)

    call EP_Win_allocate(int(8 * n, MPI_ADDRESS_KIND), 8, MPI_INFO_NULL, comm, baseptr, &
                         win, ierr)
    call check(ierr == EP_SUCCESS, 'Win_allocate', rank, nfail)
    call c_f_pointer(baseptr, w, [n])
    w = -1
    do i = 1, n
      src(i) = rank * 100 + i
    end do
    call EP_Win_get_attr(win, EP_WIN_SIZE, attr, flag, ierr)
    call check(ierr == EP_SUCCESS .and. flag .and. attr == 8 * n, 'EP_WIN_SIZE', rank, nfail)
    call EP_Win_get_attr(win, EP_WIN_DISP_UNIT, attr, flag)
    call check(flag .and. attr == 8, 'EP_WIN_DISP_UNIT', rank, nfail)
    call EP_Win_get_attr(win, EP_WIN_BASE, attr, flag)
    call check(flag .and. attr == transfer(baseptr, attr), 'EP_WIN_BASE', rank, nfail)

    call EP_Win_fence(0, win, ierr)
    call EP_Put(src, n, MPI_DOUBLE_PRECISION, right, zero, n, MPI_DOUBLE_PRECISION, win, ierr)
    call check(ierr == EP_SUCCESS, 'Put', rank, nfail)
    call EP_Win_fence(0, win, ierr)
    do i = 1, n
      call check(w(i) == left * 100 + i, 'Put arrived', rank, nfail)
    end do

    ! Get the left neighbour's window (holding its left neighbour's src) into row 2 of g.
    g = 0
    call EP_Get(g(2, :), n, MPI_DOUBLE_PRECISION, left, zero, n, MPI_DOUBLE_PRECISION, &
                win, ierr)
    call check(ierr == EP_SUCCESS, 'Get', rank, nfail)
    call EP_Win_fence(0, win, ierr)
    do i = 1, n
      call check(g(2, i) == mod(left + size - 1, size) * 100 + i, 'Get into a section', rank, nfail)
    end do
    call check(all(g(1, :) == 0) .and. all(g(3, :) == 0), &
               'Get left the other rows alone', rank, nfail)
    ! A passive epoch: the section's values arrive with the unlock.
    call EP_Win_fence(EP_MODE_NOSUCCEED, win)
    g = 0
    call EP_Win_lock(EP_LOCK_SHARED, right, 0, win, ierr)
    call EP_Get(g(3, 2:n), n - 1, MPI_DOUBLE_PRECISION, right, 1_MPI_ADDRESS_KIND, n - 1, &
                MPI_DOUBLE_PRECISION, win, ierr)
    call EP_Win_unlock(right, win, ierr)
    call check(ierr == EP_SUCCESS, 'lock, Get, unlock', rank, nfail)
    do i = 2, n
      call check(g(3, i) == rank * 100 + i, 'Get in a passive epoch', rank, nfail)
    end do
    call check(g(3, 1) == 0 .and. all(g(1:2, :) == 0), 'passive Get left the rest alone', &
               rank, nfail)
    call EP_Barrier(comm)  ! nobody frees the window while a neighbour still reads it
    call EP_Win_free(win, ierr)
    call check(ierr == EP_SUCCESS .and. win == EP_WIN_NULL, 'Win_free', rank, nfail)

    ! A window on a Fortran array; every endpoint adds rank + i to element i of endpoint 0.
    sums = 0
    call EP_Win_create(sums, int(4 * n, MPI_ADDRESS_KIND), 4, MPI_INFO_NULL, comm, win2, ierr)
    call check(ierr == EP_SUCCESS, 'Win_create', rank, nfail)
    call EP_Win_fence(0, win2)
    acc = [(rank + i, i = 1, n)]  ! the origin stays untouched until the fence
    call EP_Accumulate(acc, n, MPI_INTEGER, 0, zero, n, MPI_INTEGER, &
                       MPI_SUM, win2, ierr)
    call check(ierr == EP_SUCCESS, 'Accumulate', rank, nfail)
    call EP_Win_fence(0, win2)
    if (rank == 0) then
      do i = 1, n
        call check(sums(i) == size * (size - 1) / 2 + size * i, 'Accumulate sums', rank, nfail)
      end do
    end if
    call EP_Win_free(win2)
    call EP_Comm_free(comm)
  end subroutine endpoint
end program rma
