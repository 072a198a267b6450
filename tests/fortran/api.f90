! The calls whose Fortran glue is not one generated rule, over endpoints (OpenMP threads,
! 2 or 3 per process): persistent requests on array sections (EP_Send_init/EP_Recv_init,
! EP_Startall, EP_Waitsome with 1-based indices, restarted), EP_Waitany, names and error
! strings, attributes with Fortran copy/delete callbacks through EP_Comm_dup, EP_TAG_UB, a
! Fortran error handler, and a generalized request with Fortran query/free callbacks.
module api_callbacks
  use mpi_f08, only: MPI_ADDRESS_KIND
  use ep_f08
  implicit none
  integer :: deletes = 0  ! delete callbacks run (atomic updates)
  integer :: frees = 0    ! generalized request free callbacks run (atomic updates)
contains
  subroutine copy_plus_one(oldcomm, comm_keyval, extra_state, attribute_val_in, &
                           attribute_val_out, flag, ierror)
    type(EP_Comm) :: oldcomm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    attribute_val_out = attribute_val_in + extra_state
    flag = .true.
    ierror = EP_SUCCESS
  end subroutine copy_plus_one
  subroutine count_delete(comm, comm_keyval, attribute_val, extra_state, ierror)
    type(EP_Comm) :: comm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    !$omp atomic
    deletes = deletes + 1
    ierror = EP_SUCCESS
  end subroutine count_delete
  subroutine on_error(comm, error_code)
    type(EP_Comm) :: comm
    integer :: error_code
    ! Records that it ran, with the right code, in the communicator's name.
    call EP_Comm_set_name(comm, 'handled')
    if (error_code /= EP_ERR_OTHER) call EP_Comm_set_name(comm, 'wrong code')
  end subroutine on_error
  subroutine query(extra_state, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    type(EP_Status) :: status
    integer :: ierror
    status%EP_SOURCE = int(extra_state)
    status%EP_TAG = 42
    status%EP_ERROR = EP_SUCCESS
    ierror = EP_SUCCESS
  end subroutine query
  subroutine free_fn(extra_state, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: ierror
    !$omp atomic
    frees = frees + 1
    ierror = EP_SUCCESS
  end subroutine free_fn
  subroutine cancel_fn(extra_state, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    logical :: complete
    integer :: ierror
    ierror = EP_SUCCESS
  end subroutine cancel_fn
end module api_callbacks

program api
  use mpi_f08
  use ep_f08
  use omp_lib
  use api_callbacks
  use ep_ftest
  implicit none

  call run_endpoints('api', 2, 3, endpoint, after_endpoints)

contains

  ! Every endpoint's callbacks ran: two attribute deletes and one generalized request free.
  subroutine after_endpoints(nep, nfail)
    integer, intent(in) :: nep
    integer, intent(inout) :: nfail
    if (deletes /= 2 * nep) then
      print '(a, i0, a, i0)', 'api: delete callbacks ran ', deletes, ' times, expected ', 2 * nep
      nfail = nfail + 1
    end if
    if (frees /= nep) then
      print '(a, i0, a, i0)', 'api: free callbacks ran ', frees, ' times, expected ', nep
      nfail = nfail + 1
    end if
  end subroutine after_endpoints

  subroutine endpoint(comm, nfail)
    type(EP_Comm), intent(inout) :: comm
    integer, intent(inout) :: nfail
    integer, parameter :: n = 5
    integer :: rank, size, left, right, ierr, i, round, outcount, idx, keyval, len
    integer, asynchronous :: s(2, n), r(3, n)
    integer :: indices(2)
    type(EP_Request) :: reqs(2), greq
    type(EP_Status) :: statuses(2), status
    type(EP_Comm) :: dup
    type(EP_Errhandler) :: eh
    character(len=EP_MAX_OBJECT_NAME) :: name
    character(len=EP_MAX_ERROR_STRING) :: text
    integer(kind=MPI_ADDRESS_KIND) :: val
    logical :: flag

    call EP_Comm_rank(comm, rank)
    call EP_Comm_size(comm, size)
    right = mod(rank + 1, size)
    left = mod(rank + size - 1, size)

    ! Persistent requests on sections: row 2 of s goes right, row 3 of r comes from left.
    r = -1
    call EP_Recv_init(r(3, :), n, MPI_INTEGER, left, 5, comm, reqs(1), ierr)
    call EP_Send_init(s(2, :), n, MPI_INTEGER, right, 5, comm, reqs(2), ierr)
    do round = 1, 3
      s = 0
      s(2, :) = [(1000 * round + 10 * rank + i, i = 1, n)]  ! set after the init: re-copied at start
      call EP_Startall(2, reqs, ierr)
      call check(ierr == EP_SUCCESS, 'Startall', rank, nfail)
      outcount = 0
      idx = 0
      do while (idx < 2)
        call EP_Waitsome(2, reqs, outcount, indices, statuses, ierr)
        do i = 1, outcount
          call check(indices(i) == 1 .or. indices(i) == 2, 'Waitsome index 1-based', rank, nfail)
        end do
        idx = idx + outcount
      end do
      call check(all(reqs /= EP_REQUEST_NULL), 'persistent requests stay', rank, nfail)
      do i = 1, n
        call check(r(3, i) == 1000 * round + 10 * left + i, 'persistent receive', rank, nfail)
      end do
      call check(all(r(1:2, :) == -1), 'persistent receive left the other rows', rank, nfail)
    end do
    call EP_Request_free(reqs(1))
    call EP_Request_free(reqs(2))
    call check(all(reqs == EP_REQUEST_NULL), 'Request_free', rank, nfail)

    ! Waitany: index 1-based.
    call EP_Irecv(r(1, 1), 1, MPI_INTEGER, left, 6, comm, reqs(1))
    call EP_Isend(rank, 1, MPI_INTEGER, right, 6, comm, reqs(2))
    call EP_Waitany(2, reqs, idx, status, ierr)
    call check(idx == 1 .or. idx == 2, 'Waitany index', rank, nfail)
    call EP_Waitall(2, reqs, EP_STATUSES_IGNORE)
    call check(r(1, 1) == left, 'Irecv value', rank, nfail)

    ! Names and error strings.
    call EP_Comm_set_name(comm, 'ep world')
    call EP_Comm_get_name(comm, name, len, ierr)
    call check(ierr == EP_SUCCESS .and. name == 'ep world' .and. len == 8, 'Comm names', &
               rank, nfail)
    call EP_Error_string(EP_ERR_RANK, text, len)
    call check(len > 0 .and. len_trim(text) == len, 'Error_string', rank, nfail)

    ! Attributes: the copy callback adds extra_state (7) on dup; deletes are counted.
    call EP_Comm_create_keyval(copy_plus_one, count_delete, keyval, 7_MPI_ADDRESS_KIND, ierr)
    call check(ierr == EP_SUCCESS, 'create_keyval', rank, nfail)
    call EP_Comm_set_attr(comm, keyval, int(100 + rank, MPI_ADDRESS_KIND))
    call EP_Comm_dup(comm, dup, ierr)
    call EP_Comm_get_attr(dup, keyval, val, flag, ierr)
    call check(ierr == EP_SUCCESS .and. flag .and. val == 107 + rank, 'copy callback', rank, nfail)
    call EP_Comm_get_attr(comm, EP_TAG_UB, val, flag)
    call check(flag .and. val >= 32767, 'EP_TAG_UB', rank, nfail)
    call EP_Comm_free(dup)
    call EP_Comm_delete_attr(comm, keyval)
    call EP_Comm_free_keyval(keyval)
    call check(keyval == EP_KEYVAL_INVALID, 'free_keyval', rank, nfail)

    ! A Fortran error handler, called by EP_Comm_call_errhandler.
    call EP_Comm_create_errhandler(on_error, eh, ierr)
    call check(ierr == EP_SUCCESS, 'create_errhandler', rank, nfail)
    call EP_Comm_set_errhandler(comm, eh)
    call EP_Comm_call_errhandler(comm, EP_ERR_OTHER, ierr)
    call EP_Comm_get_name(comm, name, len)
    call check(name == 'handled', 'error handler ran', rank, nfail)
    call EP_Comm_set_errhandler(comm, EP_ERRORS_ARE_FATAL)
    call EP_Errhandler_free(eh)

    ! A generalized request: the query callback fills the status.
    call EP_Grequest_start(query, free_fn, cancel_fn, int(rank, MPI_ADDRESS_KIND), greq, ierr)
    call check(ierr == EP_SUCCESS, 'Grequest_start', rank, nfail)
    call EP_Grequest_complete(greq)
    call EP_Wait(greq, status, ierr)
    call check(ierr == EP_SUCCESS .and. status%EP_SOURCE == rank .and. status%EP_TAG == 42, &
               'Grequest query', rank, nfail)

    call EP_Barrier(comm)
    call EP_Comm_free(comm)
  end subroutine endpoint
end program api
