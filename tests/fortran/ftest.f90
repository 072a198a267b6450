! The frame every Fortran test program shares: MPI and libep up, one endpoint per OpenMP
! thread, the program's checks counted, "<name>: PASS" at world rank 0 or the job aborted.
module ep_ftest
  use mpi_f08
  use ep_f08
  use omp_lib
  implicit none
  private
  public :: run_endpoints, check

  abstract interface
    ! One endpoint's part of the test, on its own OpenMP thread; adds its failed checks.
    subroutine endpoint_body(comm, nfail)
      import :: EP_Comm
      type(EP_Comm), intent(inout) :: comm
      integer, intent(inout) :: nfail
    end subroutine endpoint_body
    ! Checks on the main thread after every endpoint finished, before EP_Finalize.
    subroutine after_body(nep, nfail)
      integer, intent(in) :: nep
      integer, intent(inout) :: nfail
    end subroutine after_body
  end interface

  character(len=32) :: prog_name = ''  ! set before the threads start, then only read

contains

  ! Runs `body` on nep_even endpoints per even world rank and nep_odd per odd one, then
  ! `after` (if given); reports and finalizes.
  subroutine run_endpoints(name, nep_even, nep_odd, body, after)
    character(len=*), intent(in) :: name
    integer, intent(in) :: nep_even, nep_odd
    procedure(endpoint_body) :: body
    procedure(after_body), optional :: after
    integer :: provided, wrank, nep, nfail, ierr
    type(EP_Comm), allocatable :: comms(:)

    prog_name = name
    call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided)
    call MPI_Comm_rank(MPI_COMM_WORLD, wrank)
    call EP_Init(ierr)
    if (ierr /= EP_SUCCESS) error stop "EP_Init failed"
    nep = merge(nep_even, nep_odd, mod(wrank, 2) == 0)
    allocate(comms(nep))
    call EP_Comm_create_endpoints(MPI_COMM_WORLD, nep, MPI_INFO_NULL, comms, ierr)
    if (ierr /= EP_SUCCESS) error stop "EP_Comm_create_endpoints failed"
    nfail = 0
    !$omp parallel num_threads(nep) reduction(+:nfail)
    if (omp_get_num_threads() /= nep) nfail = nfail + 1
    call body(comms(omp_get_thread_num() + 1), nfail)
    !$omp end parallel
    if (present(after)) call after(nep, nfail)
    call EP_Finalize(ierr)
    if (nfail /= 0 .or. ierr /= EP_SUCCESS) then
      print '(2a, i0, a, i0, a)', name, ': process ', wrank, ': ', nfail, ' FAILED checks'
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
    if (wrank == 0) print '(2a)', name, ': PASS'
    call MPI_Finalize()
  end subroutine run_endpoints

  ! Counts and reports a failed check of endpoint `rank`.
  subroutine check(ok, what, rank, nfail)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in) :: rank
    integer, intent(inout) :: nfail
    if (.not. ok) then
      nfail = nfail + 1
      print '(2a, i0, 2a)', trim(prog_name), ': endpoint ', rank, ': FAILED: ', what
    end if
  end subroutine check

end module ep_ftest
