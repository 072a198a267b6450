#!/usr/bin/env python3
"""Generates the Fortran 2008 binding of libep from the C header.

    gen_ep_f08.py EP_H OUTDIR

Reads every `int EP_*(...)`/`double EP_*(...)` prototype and every integer constant of
ep.h and writes into OUTDIR:
  ep_f08_api.inc     module procedures EP_* (mpi_f08 style: handles as derived types,
                     LOGICAL flags, optional ierror) and the BIND(C) interfaces to the glue
  ep_f08_glue_gen.c  the C glue epf_* each wrapper calls: converts MPI handles with
                     MPI_*_f2c, buffers from their C descriptors (ep_f08_glue.h), statuses
  ep_f08_glue_decl.h the prototypes of every epf_* (generated and by hand)
  ep_f08_consts.c    a program printing the integer constants as Fortran parameters
The mapping from a C parameter to Fortran is one rule per (type, name) in `classify`;
functions whose glue needs more than the rules (completion calls, callbacks, strings,
attributes) are listed in GLUE_BY_HAND and written in ep_f08_glue.c, with the signature
the rules give.  A prototype the rules cannot map stops the generator: ep.h and the
binding cannot drift apart silently.
"""
import re
import sys

HANDLES = ["EP_Comm", "EP_Request", "EP_Message", "EP_Win", "EP_Group", "EP_Team",
           "EP_Errhandler"]
MPI_HANDLES = {"MPI_Datatype": "Type", "MPI_Op": "Op", "MPI_Info": "Info", "MPI_Comm": "Comm"}
# Buffers whose memory libep keeps (window memory, attached buffers): must be contiguous.
FIXED_BUFFERS = {("EP_Win_create", "base"), ("EP_Win_attach", "base"),
                 ("EP_Win_detach", "base"), ("EP_Buffer_attach", "buffer")}
LOGICALS = {"flag", "high"}
# Functions whose C glue is in ep_f08_glue.c (their Fortran side is generated).
GLUE_BY_HAND = {
    "EP_Wait", "EP_Test", "EP_Waitall", "EP_Testall", "EP_Waitany", "EP_Testany",
    "EP_Waitsome", "EP_Testsome", "EP_Request_free", "EP_Request_get_status", "EP_Start",
    "EP_Startall", "EP_Error_string", "EP_Comm_get_name", "EP_Comm_set_name",
    "EP_Comm_create_keyval", "EP_Comm_set_attr", "EP_Comm_get_attr", "EP_Win_get_attr",
    "EP_Comm_create_errhandler", "EP_Grequest_start", "EP_Alltoallw", "EP_Ialltoallw",
    "EP_Win_free",
}
# Window synchronizations that complete the origin side of earlier RMA operations:
# value = the parameter naming the target (None: every target).
WIN_SYNC = {"EP_Win_fence": None, "EP_Win_unlock": "rank", "EP_Win_unlock_all": None,
            "EP_Win_flush": "rank", "EP_Win_flush_all": None,
            "EP_Win_flush_local": "rank", "EP_Win_flush_local_all": None,
            "EP_Win_complete": None}
# One-sided accumulate-family calls: libep's element-type table (runtime/reduce.cc) knows
# the C types, so named Fortran types are passed as their C equivalents (epf_type_acc).
ACCUMULATES = {"EP_Accumulate", "EP_Get_accumulate", "EP_Fetch_and_op",
               "EP_Compare_and_swap", "EP_Raccumulate", "EP_Rget_accumulate"}
STRING_LEN = {"EP_Error_string": "EP_MAX_ERROR_STRING",
              "EP_Comm_get_name": "EP_MAX_OBJECT_NAME"}
CALLBACKS = {"EP_Comm_copy_attr_function": "comm_copy", "EP_Comm_delete_attr_function":
             "comm_delete", "EP_Comm_errhandler_function": "comm_errhandler",
             "EP_Grequest_query_function": "grequest_query",
             "EP_Grequest_free_function": "grequest_free",
             "EP_Grequest_cancel_function": "grequest_cancel"}


class Param:
    def __init__(self, text):
        text = " ".join(text.split())
        self.const = text.startswith("const ")
        m = re.match(r"(?:const )?([A-Za-z_]\w*)\s*(\**)\s*(\w+)\s*((?:\[\w*\])*)$", text)
        if not m:
            raise SystemExit("gen_ep_f08: cannot parse parameter '%s'" % text)
        self.ctype, stars, self.name, dims = m.groups()
        self.ptr = len(stars)
        self.dims = dims
        self.text = text


def classify(fn, p):
    """(kind, detail) of one C parameter."""
    t, n = p.ctype, p.name
    if t == "void" and p.ptr == 1:
        if n in ("baseptr", "buffer_addr"):
            return "cptr_out", None
        if n in ("attribute_val", "extra_state"):
            return "aint_in", None  # EP_Comm_get_attr/EP_Win_get_attr: by hand, aint_out
        if (fn, n) in FIXED_BUFFERS:
            return "buffer_fixed", None
        return ("buffer_in" if p.const else "buffer_inout"), None
    if t == "int" and p.ptr == 0 and not p.dims:
        return ("logical_in" if n in LOGICALS else "int_in"), None
    if t == "int" and p.ptr == 1:
        return ("logical_out" if n in LOGICALS else "int_out"), None
    if t == "int" and p.dims == "[]":
        return ("int_array_in" if p.const else "int_array_out"), None
    if t == "int" and p.dims == "[][3]":
        return "int_ranges", None
    if t == "char" and p.ptr == 1:
        return ("string_in" if p.const else "string_out"), None
    if t in MPI_HANDLES and p.ptr == 0 and not p.dims:
        return "mpi_in", t
    if t in MPI_HANDLES and p.dims == "[]":
        return "mpi_array_in", t
    if t == "MPI_Aint":
        return ("aint_in" if p.ptr == 0 else "aint_out"), None
    if t in HANDLES:
        if p.ptr == 0 and not p.dims:
            return "handle_in", t
        return "handle_ref", t  # a pointer or an array: the glue gets the address
    if t == "EP_Status":
        if p.dims == "[]":
            return "statuses", None
        return ("status_in" if p.const else "status_ref"), None
    if t in CALLBACKS and p.ptr == 1:
        return "callback", t
    raise SystemExit("gen_ep_f08: %s: no rule for parameter '%s'" % (fn, p.text))


def parse_header(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    funcs = []
    for m in re.finditer(r"^[ \t]*(int|double)\s+(EP_\w+)\s*\(([^)]*)\)\s*;", text, re.M):
        ret, name, args = m.group(1), m.group(2), m.group(3).strip()
        params = [] if args in ("", "void") else [Param(a) for a in args.split(",")]
        funcs.append((name, ret, params))
    consts = []
    for m in re.finditer(r"#define\s+(EP_\w+)\s+(\S.*)", text):
        name, value = m.group(1), m.group(2).strip()
        if "(" in value or name.endswith("_H_") or name.endswith("_FN"):
            continue  # handles, pointers and callbacks: declared by hand in ep_f08.f90
        if name in ("EP_IN_PLACE", "EP_BOTTOM"):
            continue
        consts.append(name)
    enum = re.search(r"enum\s*\{([^}]*)\}", text)
    for item in enum.group(1).split(","):
        item = item.split("=")[0].strip()
        if item:
            consts.append(item)
    return funcs, consts


def fortran_dummy(fn, p, kind, detail):
    n = p.name
    if kind == "buffer_in":
        return "type(*), dimension(..), intent(in), asynchronous :: %s" % n
    if kind in ("buffer_inout", "buffer_fixed"):
        return "type(*), dimension(..), asynchronous :: %s" % n
    if kind == "cptr_out":
        return "type(c_ptr), intent(out) :: %s" % n
    if kind == "int_in":
        return "integer, intent(in) :: %s" % n
    if kind == "int_out":
        inout = n in ("comm_keyval", "size") and fn in ("EP_Comm_free_keyval",)
        return "integer, intent(%s) :: %s" % ("inout" if inout else "out", n)
    if kind == "logical_in":
        return "logical, intent(in) :: %s" % n
    if kind == "logical_out":
        return "logical, intent(out) :: %s" % n
    if kind == "int_array_in":
        return "integer, intent(in) :: %s(*)" % n
    if kind == "int_array_out":
        return "integer, intent(out) :: %s(*)" % n
    if kind == "int_ranges":
        return "integer, intent(in) :: %s(3, *)" % n
    if kind == "string_in":
        return "character(len=*), intent(in) :: %s" % n
    if kind == "string_out":
        return "character(len=*), intent(out) :: %s" % n
    if kind == "mpi_in":
        return "type(%s), intent(in) :: %s" % (detail, n)
    if kind == "mpi_array_in":
        return "type(%s), intent(in) :: %s(*)" % (detail, n)
    if kind == "aint_in":
        return "integer(kind=MPI_ADDRESS_KIND), intent(in) :: %s" % n
    if kind == "aint_out":
        return "integer(kind=MPI_ADDRESS_KIND), intent(out) :: %s" % n
    if kind == "handle_in":
        return "type(%s), intent(in) :: %s" % (detail, n)
    if kind == "handle_ref":
        if p.dims:
            return "type(%s), intent(inout) :: %s(*)" % (detail, n)
        return "type(%s), intent(inout) :: %s" % (detail, n)
    if kind == "statuses":
        return "type(EP_Status), intent(inout) :: %s(*)" % n
    if kind == "status_in":
        return "type(EP_Status), intent(in) :: %s" % n
    if kind == "status_ref":
        return "type(EP_Status), intent(inout) :: %s" % n
    if kind == "callback":
        return "procedure(%s) :: %s" % (detail, n)
    raise AssertionError(kind)


def glue_dummy(fn, p, kind, detail):
    """(Fortran declaration in the BIND(C) interface, C parameter) of one argument."""
    n = p.name
    if kind in ("buffer_in", "buffer_inout", "buffer_fixed"):
        return ("type(*), dimension(..), asynchronous :: %s" % n, "CFI_cdesc_t *%s" % n)
    if kind == "cptr_out":
        return ("type(c_ptr) :: %s" % n, "void **%s" % n)
    if kind in ("int_in", "logical_in"):
        return ("integer(c_int), value :: %s" % n, "int %s" % n)
    if kind in ("int_out", "logical_out"):
        return ("integer(c_int) :: %s" % n, "int *%s" % n)
    if kind in ("int_array_in", "int_array_out"):
        return ("integer(c_int) :: %s(*)" % n, "int *%s" % n)
    if kind == "int_ranges":
        return ("integer(c_int) :: %s(3, *)" % n, "int (*%s)[3]" % n)
    if kind == "string_in":
        return ("character(kind=c_char) :: %s(*)" % n, "const char *%s" % n)
    if kind == "string_out":
        return ("character(kind=c_char) :: %s(*)" % n, "char *%s" % n)
    if kind == "mpi_in":
        return ("integer(c_int), value :: %s" % n, "MPI_Fint %s" % n)
    if kind == "mpi_array_in":
        return ("type(%s) :: %s(*)" % (detail, n), "const MPI_Fint *%s" % n)
    if kind == "aint_in":
        return ("integer(kind=MPI_ADDRESS_KIND), value :: %s" % n, "MPI_Aint %s" % n)
    if kind == "aint_out":
        return ("integer(kind=MPI_ADDRESS_KIND) :: %s" % n, "MPI_Aint *%s" % n)
    if kind == "handle_in":
        return ("type(c_ptr), value :: %s" % n, "%s %s" % (detail, n))
    if kind == "handle_ref":
        d = "(*)" if p.dims else ""
        return ("type(%s) :: %s%s" % (detail, n, d), "%s *%s" % (detail, n))
    if kind in ("statuses", "status_in", "status_ref"):
        d = "(*)" if kind == "statuses" else ""
        return ("type(EP_Status) :: %s%s" % (n, d), "EP_Status *%s" % n)
    if kind == "callback":
        return ("type(c_funptr), value :: %s" % n, "void (*%s)(void)" % n)
    raise AssertionError(kind)


def wrap(line, width=100):
    """A free-form Fortran line continued with & at ", " boundaries to fit width."""
    if len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    out, cur = [], line
    while len(cur) > width:
        cut = cur.rfind(", ", 0, width - 2)
        if cut <= len(indent):
            break
        out.append(cur[:cut + 1] + " &")
        cur = indent + cur[cut + 2:]
    out.append(cur)
    return "\n".join(out)


def glue_name(fn):
    return "epf_" + fn[3:].lower()


def gen_fortran(fn, ret, params, kinds):
    """One BIND(C) interface and one module procedure."""
    ifc, body = [], []
    if ret == "double":  # EP_Wtime: the C function itself
        ifc += ["  function %s() bind(C, name=\"%s\")" % (fn, fn), "    import :: c_double",
                "    real(c_double) :: %s" % fn, "  end function %s" % fn]
        return ifc, body, True
    g = glue_name(fn)
    names = [p.name for p in params]
    ifc.append("  integer(c_int) function %s(%s) bind(C, name=\"%s\")" % (g, ", ".join(names), g))
    ifc.append("    import")
    for p, (k, d) in zip(params, kinds):
        ifc.append("    " + glue_dummy(fn, p, k, d)[0])
    ifc.append("  end function %s" % g)

    locals_, pre, post, actuals = [], [], [], []
    for p, (k, d) in zip(params, kinds):
        n = p.name
        if k == "logical_in":
            actuals.append("merge(1_c_int, 0_c_int, %s)" % n)
        elif k == "logical_out":
            locals_.append("integer(c_int) :: %s_c" % n)
            actuals.append("%s_c" % n)
            post.append("%s = %s_c /= 0" % (n, n))
        elif k == "mpi_in":
            actuals.append("%s%%MPI_VAL" % n)
        elif k == "handle_in":
            actuals.append("%s%%EP_VAL" % n)
        elif k == "string_in":
            actuals.append("trim(%s) // c_null_char" % n)
        elif k == "string_out":
            length = STRING_LEN[fn]
            locals_.append("character(kind=c_char) :: %s_c(%s)" % (n, length))
            locals_.append("integer :: %s_i" % n)
            actuals.append("%s_c" % n)
            post.append("%s = ''" % n)
            post.append("if (ierror_c == EP_SUCCESS) then")
            post.append("  do %s_i = 1, min(resultlen, len(%s))" % (n, n))
            post.append("    %s(%s_i:%s_i) = %s_c(%s_i)" % (n, n, n, n, n))
            post.append("  end do")
            post.append("end if")
        elif k == "callback":
            actuals.append("c_funloc(%s)" % n)
        else:
            actuals.append(n)
    sig = names + ["ierror"]
    body.append("  subroutine %s(%s)" % (fn, ", ".join(sig)))
    for p, (k, d) in zip(params, kinds):
        body.append("    " + fortran_dummy(fn, p, k, d))
    body.append("    integer, optional, intent(out) :: ierror")
    body.append("    integer(c_int) :: ierror_c")
    body += ["    " + l for l in locals_]
    body += ["    " + l for l in pre]
    body.append("    ierror_c = %s(%s)" % (g, ", ".join(actuals)))
    body += ["    " + l for l in post]
    body.append("    if (present(ierror)) ierror = ierror_c")
    body.append("  end subroutine %s" % fn)
    return ifc, body, False


def gen_c(fn, params, kinds):
    """The generated glue function, or None when it is written by hand."""
    cparams = [glue_dummy(fn, p, k, d)[1] for p, (k, d) in zip(params, kinds)]
    head = "int %s(%s)" % (glue_name(fn), ", ".join(cparams) or "void")
    if fn in GLUE_BY_HAND:
        return head + ";\n", None
    names = [p.name for p in params]
    has_buffers = any(k.startswith("buffer_") for k, _ in kinds)
    lines = [head + " {"]
    if has_buffers:
        lines += ["  epf_tmps tmps = EPF_TMPS_INIT;", "  int rc;"]
    else:
        lines += ["  int rc;"]
    args = []
    for p, (k, d) in zip(params, kinds):
        n = p.name
        if k in ("buffer_in", "buffer_inout", "buffer_fixed"):
            lines.append("  void *%s_p;" % n)
            mode = {"buffer_in": "EPF_IN", "buffer_inout": "EPF_INOUT",
                    "buffer_fixed": "EPF_FIXED"}[k]
            lines.append("  rc = epf_buffer(%s, %s, &tmps, &%s_p);" % (n, mode, n))
            lines.append("  if (rc != EP_SUCCESS) goto done;")
            args.append("%s_p" % n)
        elif k == "mpi_in" and d == "MPI_Datatype" and fn in ACCUMULATES:
            args.append("epf_type_acc(%s)" % n)
        elif k == "mpi_in":
            args.append("MPI_%s_f2c(%s)" % (MPI_HANDLES[d], n))
        elif k == "status_ref":
            args.append("epf_status(%s)" % n)
        elif k == "statuses":
            args.append("epf_statuses(%s)" % n)
        elif k == "callback":
            raise SystemExit("gen_ep_f08: %s takes a callback: list it in GLUE_BY_HAND" % fn)
        else:
            args.append(n)
    lines.append("  rc = %s(%s);" % (fn, ", ".join(args)))
    if has_buffers:
        lines.append("done:")
        if "request" in names and any(k == "handle_ref" and d == "EP_Request"
                                      for (k, d) in kinds):
            persistent = "1" if fn.endswith("_init") else "0"
            lines.append("  epf_defer_request(&tmps, rc, *request, %s);" % persistent)
        elif "win" in names and "target_rank" in names:
            lines.append("  epf_defer_win(&tmps, rc, win, target_rank);")
        else:
            lines.append("  epf_finish(&tmps);")
    if fn in WIN_SYNC:
        target = WIN_SYNC[fn] or "EPF_ALL_TARGETS"
        lines.append("  if (rc == EP_SUCCESS) epf_win_synced(win, %s);" % target)
    lines.append("  return rc;")
    lines.append("}")
    return head + ";\n", "\n".join(lines) + "\n"


def main():
    ep_h, outdir = sys.argv[1], sys.argv[2]
    funcs, consts = parse_header(open(ep_h).read())
    ifcs, bodies, direct, cdecl, cdefs, names = [], [], [], [], [], []
    for fn, ret, params in funcs:
        kinds = [classify(fn, p) for p in params]
        if fn in ("EP_Comm_get_attr", "EP_Win_get_attr"):
            kinds = [("aint_out", None) if p.name == "attribute_val" else k
                     for p, k in zip(params, kinds)]
        ifc, body, is_direct = gen_fortran(fn, ret, params, kinds)
        ifcs += ifc
        bodies += body
        names.append(fn)
        if is_direct:
            direct.append(fn)
            continue
        decl, definition = gen_c(fn, params, kinds)
        cdecl.append(decl)
        if definition:
            cdefs.append(definition)
    with open(outdir + "/ep_f08_api.inc", "w") as f:
        f.write("! Generated by fortran/gen_ep_f08.py from ep.h: do not edit.\n")
        f.write("! %d procedures of ep.h.\n" % len(names))
        for i in range(0, len(names), 4):
            f.write("  public :: %s\n" % ", ".join(names[i:i + 4]))
        f.write("  interface\n")
        f.write("\n".join(wrap(l) for l in ifcs) + "\n")
        f.write("  end interface\n")
        f.write("contains\n")
        f.write("\n".join(wrap(l) for l in bodies) + "\n")
    with open(outdir + "/ep_f08_glue_gen.c", "w") as f:
        f.write("/* Generated by fortran/gen_ep_f08.py from ep.h: do not edit. */\n")
        f.write('#include "ep_f08_glue.h"\n#include "ep_f08_glue_decl.h"\n\n')
        f.write("\n".join(cdefs))
    with open(outdir + "/ep_f08_glue_decl.h", "w") as f:
        f.write("/* Generated by fortran/gen_ep_f08.py from ep.h: do not edit.\n"
                " * The epf_* glue functions the module's BIND(C) interfaces call. */\n")
        f.write("".join(cdecl))
    with open(outdir + "/ep_f08_consts.c", "w") as f:
        f.write("/* Generated by fortran/gen_ep_f08.py: prints ep.h's integer constants. */\n")
        f.write("#include <stdio.h>\n#include <ep/ep.h>\nint main(void) {\n")
        for c in consts:
            f.write('  printf("  integer, parameter, public :: %s = %%d\\n", (int)(%s));\n'
                    % (c, c))
        f.write("  return 0;\n}\n")


if __name__ == "__main__":
    main()
