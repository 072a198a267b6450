! fortran_ring.f90 - a Fortran program on endpoints through MPICH's `use mpi` binding,
! whose procedures call the C MPI_ functions (so libep_mpi serves them).  The endpoints
! come from the C function MPI_Comm_create_endpoints through an interface of its own (the
! proposal has no Fortran binding yet); Fortran handles are MPICH's C handles.  Each
! OpenMP thread passes a token around a ring of all endpoints with MPI_ANY_SOURCE and
! checks the status, then an MPI_Allreduce and an MPI_Isend/MPI_Irecv/MPI_Waitall.
! With -DPLAIN_MPI (plain MPI, no libep_mpi): one thread per process on a duplicate of
! MPI_COMM_WORLD, the same checks.
program fortran_ring
  use mpi
  use omp_lib
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    integer(c_int) function create_endpoints(parent, n, info, comms) &
        bind(C, name="MPI_Comm_create_endpoints")
      import :: c_int
      integer(c_int), value :: parent, n, info
      integer(c_int) :: comms(*)
    end function create_endpoints
  end interface
  integer :: ierr, provided, wrank, nt, rc, i
  integer :: comms(3)

  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, wrank, ierr)
#ifdef PLAIN_MPI
  nt = 1
  call MPI_Comm_dup(MPI_COMM_WORLD, comms(1), rc)
#else
  nt = 1 + mod(wrank + 1, 3)
  rc = create_endpoints(MPI_COMM_WORLD, nt, MPI_INFO_NULL, comms)
#endif
  if (rc /= MPI_SUCCESS) call fail("MPI_Comm_create_endpoints", rc)
!$omp parallel num_threads(nt)
  call body(comms(omp_get_thread_num() + 1))
!$omp end parallel
  do i = 1, nt
    call MPI_Comm_free(comms(i), ierr)
    if (comms(i) /= MPI_COMM_NULL) call fail("MPI_Comm_free", comms(i))
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (wrank == 0) print '(a)', "fortran_ring: PASS"
  call MPI_Finalize(ierr)

contains

  subroutine fail(what, code)
    character(len=*), intent(in) :: what
    integer, intent(in) :: code
    integer :: e
    print '(a, a, i0)', what, " failed: ", code
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine fail

  subroutine body(c)
    integer, intent(in) :: c
    integer :: r, n, tok, e, cnt, s, x, y, req(2)
    integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2)
    call MPI_Comm_rank(c, r, e)
    call MPI_Comm_size(c, n, e)
    if (r == 0) then  ! the receive is posted first: with one endpoint it sends to itself
      x = 0
      call MPI_Irecv(tok, 1, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, c, req(1), e)
      call MPI_Send(x, 1, MPI_INTEGER, mod(1, n), 5, c, e)
      call MPI_Wait(req(1), st, e)
      if (tok /= n - 1) call fail("token at 0", tok)
    else
      call MPI_Recv(tok, 1, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, c, st, e)
      if (tok /= r - 1 .or. st(MPI_SOURCE) /= r - 1 .or. st(MPI_TAG) /= 5) &
        call fail("token", tok)
      tok = tok + 1
      call MPI_Send(tok, 1, MPI_INTEGER, mod(r + 1, n), 5, c, e)
    end if
    call MPI_Get_count(st, MPI_INTEGER, cnt, e)
    if (cnt /= 1) call fail("MPI_Get_count", cnt)
    call MPI_Allreduce(r, s, 1, MPI_INTEGER, MPI_SUM, c, e)
    if (s /= n * (n - 1) / 2) call fail("MPI_Allreduce", s)
    x = r
    call MPI_Irecv(y, 1, MPI_INTEGER, mod(r + n - 1, n), 6, c, req(1), e)
    call MPI_Isend(x, 1, MPI_INTEGER, mod(r + 1, n), 6, c, req(2), e)
    call MPI_Waitall(2, req, sts, e)
    if (y /= mod(r + n - 1, n) .or. sts(MPI_SOURCE, 1) /= y) call fail("MPI_Waitall", y)
    if (req(1) /= MPI_REQUEST_NULL) call fail("request not released", req(1))
  end subroutine body
end program fortran_ring
