! ep_f08 - the Fortran 2008 binding of libep, in mpi_f08's style.
!
! What it is: every function of ep.h as a subroutine of the same name (EP_Wtime: a
! function) with INTEGER, OPTIONAL, INTENT(OUT) :: ierror last; TYPE(EP_Comm),
! TYPE(EP_Request), TYPE(EP_Message), TYPE(EP_Win), TYPE(EP_Group), TYPE(EP_Team) and
! TYPE(EP_Errhandler) handles (component EP_VAL, compared with == and /=); mpi_f08's
! TYPE(MPI_Datatype), TYPE(MPI_Op), TYPE(MPI_Info), TYPE(MPI_Comm) where C takes an MPI
! handle; TYPE(*), DIMENSION(..) choice buffers (array sections too: see
! ep_f08_glue.h for how non-contiguous ones are passed); LOGICAL flags; TYPE(EP_Status)
! with public EP_SOURCE, EP_TAG, EP_ERROR (laid out as C's EP_Status); attribute values
! and extra states as INTEGER(KIND=MPI_ADDRESS_KIND); returned addresses (EP_Win_allocate's
! baseptr, ...) as TYPE(C_PTR).  Waitany/Testany/Waitsome/Testsome indices are 1-based
! (EP_UNDEFINED when none), as in MPI's Fortran bindings.  EP_Comm_get_attr gives the
! value of EP_TAG_UB; EP_Win_get_attr gives the base address of EP_WIN_BASE and the values
! of the other window attributes.
!
! Callbacks are ordinary Fortran procedures with the abstract interfaces below (as in
! mpi_f08).  At most EPF_MAX_ERRHANDLERS (16) error handlers may be created per process
! (C's error handler function gets no extra state: each one is a slot of a fixed set of C
! trampolines; EP_Comm_create_errhandler beyond that is EP_ERR_OTHER).
!
! The procedure part is generated from ep.h by gen_ep_f08.py (ep_f08_api.inc); the
! integer constants are ep.h's values, printed by a generated C program
! (ep_f08_consts.inc).  Threading: as ep.h.
module ep_f08
  use, intrinsic :: iso_c_binding
  use mpi_f08, only: MPI_Datatype, MPI_Op, MPI_Info, MPI_Comm, MPI_ADDRESS_KIND
  implicit none
  private

  type, bind(C), public :: EP_Comm
    type(c_ptr) :: EP_VAL = c_null_ptr
  end type EP_Comm
  type, bind(C), public :: EP_Request
    type(c_ptr) :: EP_VAL = c_null_ptr
  end type EP_Request
  type, bind(C), public :: EP_Message
    type(c_ptr) :: EP_VAL = c_null_ptr
  end type EP_Message
  type, bind(C), public :: EP_Win
    type(c_ptr) :: EP_VAL = c_null_ptr
  end type EP_Win
  type, bind(C), public :: EP_Group
    type(c_ptr) :: EP_VAL = c_null_ptr
  end type EP_Group
  type, bind(C), public :: EP_Team
    type(c_ptr) :: EP_VAL = c_null_ptr
  end type EP_Team
  type, bind(C), public :: EP_Errhandler
    type(c_ptr) :: EP_VAL = c_null_ptr
  end type EP_Errhandler

  ! C's EP_Status: the last two components are private to libep.
  type, bind(C), public :: EP_Status
    integer(c_int) :: EP_SOURCE = 0
    integer(c_int) :: EP_TAG = 0
    integer(c_int) :: EP_ERROR = 0
    integer(c_int) :: ep_cancelled_ = 0
    integer(c_long_long) :: ep_bytes_ = 0
  end type EP_Status

  type(EP_Comm), parameter, public :: EP_COMM_NULL = EP_Comm(c_null_ptr)
  type(EP_Request), parameter, public :: EP_REQUEST_NULL = EP_Request(c_null_ptr)
  type(EP_Message), parameter, public :: EP_MESSAGE_NULL = EP_Message(c_null_ptr)
  type(EP_Message), parameter, public :: EP_MESSAGE_NO_PROC = &
    EP_Message(transfer(1_c_intptr_t, c_null_ptr))
  type(EP_Win), parameter, public :: EP_WIN_NULL = EP_Win(c_null_ptr)
  type(EP_Group), parameter, public :: EP_GROUP_NULL = EP_Group(c_null_ptr)
  type(EP_Group), parameter, public :: EP_GROUP_EMPTY = &
    EP_Group(transfer(3_c_intptr_t, c_null_ptr))
  type(EP_Team), parameter, public :: EP_TEAM_NULL = EP_Team(c_null_ptr)
  type(EP_Errhandler), parameter, public :: EP_ERRHANDLER_NULL = EP_Errhandler(c_null_ptr)
  type(EP_Errhandler), parameter, public :: EP_ERRORS_ARE_FATAL = &
    EP_Errhandler(transfer(1_c_intptr_t, c_null_ptr))
  type(EP_Errhandler), parameter, public :: EP_ERRORS_RETURN = &
    EP_Errhandler(transfer(2_c_intptr_t, c_null_ptr))

  ! Sentinels: the glue recognizes these variables by their addresses.
  type(EP_Status), bind(C, name="ep_f08_status_ignore"), target, public :: EP_STATUS_IGNORE
  type(EP_Status), bind(C, name="ep_f08_statuses_ignore"), target, public :: &
    EP_STATUSES_IGNORE(1)
  integer(c_int), bind(C, name="ep_f08_in_place"), target, public :: EP_IN_PLACE
  integer(c_int), bind(C, name="ep_f08_bottom"), target, public :: EP_BOTTOM

  include 'ep_f08_consts.inc'

  abstract interface
    subroutine EP_Comm_copy_attr_function(oldcomm, comm_keyval, extra_state, &
                                          attribute_val_in, attribute_val_out, flag, ierror)
      import :: EP_Comm, MPI_ADDRESS_KIND
      type(EP_Comm) :: oldcomm
      integer :: comm_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
      logical :: flag
    end subroutine EP_Comm_copy_attr_function
    subroutine EP_Comm_delete_attr_function(comm, comm_keyval, attribute_val, extra_state, &
                                            ierror)
      import :: EP_Comm, MPI_ADDRESS_KIND
      type(EP_Comm) :: comm
      integer :: comm_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    end subroutine EP_Comm_delete_attr_function
    subroutine EP_Comm_errhandler_function(comm, error_code)
      import :: EP_Comm
      type(EP_Comm) :: comm
      integer :: error_code
    end subroutine EP_Comm_errhandler_function
    subroutine EP_Grequest_query_function(extra_state, status, ierror)
      import :: EP_Status, MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      type(EP_Status) :: status
      integer :: ierror
    end subroutine EP_Grequest_query_function
    subroutine EP_Grequest_free_function(extra_state, ierror)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      integer :: ierror
    end subroutine EP_Grequest_free_function
    subroutine EP_Grequest_cancel_function(extra_state, complete, ierror)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      logical :: complete
      integer :: ierror
    end subroutine EP_Grequest_cancel_function
  end interface
  public :: EP_Comm_copy_attr_function, EP_Comm_delete_attr_function, &
    EP_Comm_errhandler_function, EP_Grequest_query_function, EP_Grequest_free_function, &
    EP_Grequest_cancel_function
  public :: EP_COMM_NULL_COPY_FN, EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN

  interface operator(==)
    module procedure comm_eq, request_eq, message_eq, win_eq, group_eq, team_eq, &
      errhandler_eq
  end interface
  interface operator(/=)
    module procedure comm_ne, request_ne, message_ne, win_ne, group_ne, team_ne, &
      errhandler_ne
  end interface
  public :: operator(==), operator(/=)

  include 'ep_f08_api.inc'

  ! ---- Predefined attribute callbacks (MPI's MPI_COMM_NULL_COPY_FN, ...) ----
  subroutine EP_COMM_NULL_COPY_FN(oldcomm, comm_keyval, extra_state, attribute_val_in, &
                                  attribute_val_out, flag, ierror)
    type(EP_Comm) :: oldcomm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    flag = .false.
    ierror = EP_SUCCESS
  end subroutine EP_COMM_NULL_COPY_FN
  subroutine EP_COMM_DUP_FN(oldcomm, comm_keyval, extra_state, attribute_val_in, &
                            attribute_val_out, flag, ierror)
    type(EP_Comm) :: oldcomm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    attribute_val_out = attribute_val_in
    flag = .true.
    ierror = EP_SUCCESS
  end subroutine EP_COMM_DUP_FN
  subroutine EP_COMM_NULL_DELETE_FN(comm, comm_keyval, attribute_val, extra_state, ierror)
    type(EP_Comm) :: comm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    ierror = EP_SUCCESS
  end subroutine EP_COMM_NULL_DELETE_FN

  ! ---- Dispatchers: the glue's C trampolines call the user's Fortran procedures here ----
  integer(c_int) function ep_f08_call_copy(fn, oldcomm, keyval, extra, val_in, val_out, &
                                           flag) bind(C, name="ep_f08_call_copy")
    type(c_funptr), value :: fn
    type(c_ptr), value :: oldcomm
    integer(c_int), value :: keyval
    integer(kind=MPI_ADDRESS_KIND), value :: extra, val_in
    integer(kind=MPI_ADDRESS_KIND) :: val_out
    integer(c_int) :: flag
    procedure(EP_Comm_copy_attr_function), pointer :: p
    type(EP_Comm) :: c
    integer :: k, ierror
    logical :: f
    integer(kind=MPI_ADDRESS_KIND) :: e, vin
    call c_f_procpointer(fn, p)
    c%EP_VAL = oldcomm
    k = keyval
    e = extra
    vin = val_in
    f = .false.
    ierror = EP_SUCCESS
    call p(c, k, e, vin, val_out, f, ierror)
    flag = merge(1_c_int, 0_c_int, f)
    ep_f08_call_copy = ierror
  end function ep_f08_call_copy

  integer(c_int) function ep_f08_call_delete(fn, comm, keyval, val, extra) &
      bind(C, name="ep_f08_call_delete")
    type(c_funptr), value :: fn
    type(c_ptr), value :: comm
    integer(c_int), value :: keyval
    integer(kind=MPI_ADDRESS_KIND), value :: val, extra
    procedure(EP_Comm_delete_attr_function), pointer :: p
    type(EP_Comm) :: c
    integer :: k, ierror
    integer(kind=MPI_ADDRESS_KIND) :: v, e
    call c_f_procpointer(fn, p)
    c%EP_VAL = comm
    k = keyval
    v = val
    e = extra
    ierror = EP_SUCCESS
    call p(c, k, v, e, ierror)
    ep_f08_call_delete = ierror
  end function ep_f08_call_delete

  subroutine ep_f08_call_errhandler(fn, comm, code) bind(C, name="ep_f08_call_errhandler")
    type(c_funptr), value :: fn
    type(EP_Comm) :: comm
    integer(c_int) :: code
    procedure(EP_Comm_errhandler_function), pointer :: p
    integer :: k
    call c_f_procpointer(fn, p)
    k = code
    call p(comm, k)
  end subroutine ep_f08_call_errhandler

  integer(c_int) function ep_f08_call_query(fn, extra, status) &
      bind(C, name="ep_f08_call_query")
    type(c_funptr), value :: fn
    integer(kind=MPI_ADDRESS_KIND), value :: extra
    type(EP_Status) :: status
    procedure(EP_Grequest_query_function), pointer :: p
    integer(kind=MPI_ADDRESS_KIND) :: e
    integer :: ierror
    call c_f_procpointer(fn, p)
    e = extra
    ierror = EP_SUCCESS
    call p(e, status, ierror)
    ep_f08_call_query = ierror
  end function ep_f08_call_query

  integer(c_int) function ep_f08_call_free(fn, extra) bind(C, name="ep_f08_call_free")
    type(c_funptr), value :: fn
    integer(kind=MPI_ADDRESS_KIND), value :: extra
    procedure(EP_Grequest_free_function), pointer :: p
    integer(kind=MPI_ADDRESS_KIND) :: e
    integer :: ierror
    call c_f_procpointer(fn, p)
    e = extra
    ierror = EP_SUCCESS
    call p(e, ierror)
    ep_f08_call_free = ierror
  end function ep_f08_call_free

  integer(c_int) function ep_f08_call_cancel(fn, extra, complete) &
      bind(C, name="ep_f08_call_cancel")
    type(c_funptr), value :: fn
    integer(kind=MPI_ADDRESS_KIND), value :: extra
    integer(c_int), value :: complete
    procedure(EP_Grequest_cancel_function), pointer :: p
    integer(kind=MPI_ADDRESS_KIND) :: e
    logical :: c
    integer :: ierror
    call c_f_procpointer(fn, p)
    e = extra
    c = complete /= 0
    ierror = EP_SUCCESS
    call p(e, c, ierror)
    ep_f08_call_cancel = ierror
  end function ep_f08_call_cancel

  ! ---- Handle comparison ----
  elemental logical function ptr_eq(a, b)
    type(c_ptr), intent(in) :: a, b
    ptr_eq = transfer(a, 0_c_intptr_t) == transfer(b, 0_c_intptr_t)
  end function ptr_eq
  elemental logical function comm_eq(a, b)
    type(EP_Comm), intent(in) :: a, b
    comm_eq = ptr_eq(a%EP_VAL, b%EP_VAL)
  end function comm_eq
  elemental logical function request_eq(a, b)
    type(EP_Request), intent(in) :: a, b
    request_eq = ptr_eq(a%EP_VAL, b%EP_VAL)
  end function request_eq
  elemental logical function message_eq(a, b)
    type(EP_Message), intent(in) :: a, b
    message_eq = ptr_eq(a%EP_VAL, b%EP_VAL)
  end function message_eq
  elemental logical function win_eq(a, b)
    type(EP_Win), intent(in) :: a, b
    win_eq = ptr_eq(a%EP_VAL, b%EP_VAL)
  end function win_eq
  elemental logical function group_eq(a, b)
    type(EP_Group), intent(in) :: a, b
    group_eq = ptr_eq(a%EP_VAL, b%EP_VAL)
  end function group_eq
  elemental logical function team_eq(a, b)
    type(EP_Team), intent(in) :: a, b
    team_eq = ptr_eq(a%EP_VAL, b%EP_VAL)
  end function team_eq
  elemental logical function errhandler_eq(a, b)
    type(EP_Errhandler), intent(in) :: a, b
    errhandler_eq = ptr_eq(a%EP_VAL, b%EP_VAL)
  end function errhandler_eq
  elemental logical function comm_ne(a, b)
    type(EP_Comm), intent(in) :: a, b
    comm_ne = .not. comm_eq(a, b)
  end function comm_ne
  elemental logical function request_ne(a, b)
    type(EP_Request), intent(in) :: a, b
    request_ne = .not. request_eq(a, b)
  end function request_ne
  elemental logical function message_ne(a, b)
    type(EP_Message), intent(in) :: a, b
    message_ne = .not. message_eq(a, b)
  end function message_ne
  elemental logical function win_ne(a, b)
    type(EP_Win), intent(in) :: a, b
    win_ne = .not. win_eq(a, b)
  end function win_ne
  elemental logical function group_ne(a, b)
    type(EP_Group), intent(in) :: a, b
    group_ne = .not. group_eq(a, b)
  end function group_ne
  elemental logical function team_ne(a, b)
    type(EP_Team), intent(in) :: a, b
    team_ne = .not. team_eq(a, b)
  end function team_ne
  elemental logical function errhandler_ne(a, b)
    type(EP_Errhandler), intent(in) :: a, b
    errhandler_ne = .not. errhandler_eq(a, b)
  end function errhandler_ne
end module ep_f08
