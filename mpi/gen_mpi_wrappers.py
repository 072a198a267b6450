#!/usr/bin/env python3
"""Generates libep_mpi's MPI_ wrappers from MPICH's prototypes and libep's header.

    gen_mpi_wrappers.py MPI_PROTO_H MPIO_H EP_H OUT_CC OUT_H [--report]

Reads every MPI_/MPIX_ prototype of MPICH's mpi_proto.h (and MPI_File_open of mpio.h) and
every EP_ prototype of ep.h.  Every MPI function that takes a communicator, window,
request or group (the objects libep makes) gets a wrapper in OUT_CC unless it is written
by hand (BY_HAND: completion calls, statuses arrays, attributes, error handlers, groups,
communicator creation with attributes or threadcomm rules, ...):

  - mapped: ep.h has EP_<same name> whose parameters correspond one to one (MPI_Comm to
    EP_Comm, MPI_Request * to EP_Request *, MPI_Status * to EP_Status *, ...).  A large-
    count MPI_X_c without EP_X_c maps to EP_X: its counts are narrowed to int (a value
    that does not fit is MPI_ERR_COUNT, a displacement or size MPI_ERR_ARG); count and
    displacement arrays are copied (for a nonblocking call the copy lives as long as the
    request).  The wrapper hands a libep handle to EP_X and anything else to PMPI_X.
  - unsupported: no EP_ function for it (topologies, spawn, files, fault tolerance,
    persistent collectives, ...).  A libep handle gets the error class of UNSUPPORTED
    (default MPI_ERR_COMM, MPI_ERR_WIN, ...) through its error handler; anything else
    goes to PMPI_X.

When ep.h gains a function (EP_Comm_dup_with_info, EP_Isendrecv, EP_Allreduce_init,
EP_Send_c, ...), the next build maps the MPI call to it.  OUT_H defines
EP_MPI_HAVE_<EP name> for every function of ep.h, which the hand-written wrappers test.
A prototype with an EP_ counterpart that the rules cannot map stops the generator, so
that ep.h and the wrappers cannot drift apart silently.  --report prints the lists.
"""
import re
import sys

# MPI functions defined in the hand-written files of mpi/ (the generator emits nothing
# for them).
BY_HAND = {
    # env.cc, errors.cc
    "MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Buffer_attach", "MPI_Buffer_detach",
    "MPI_Buffer_attach_c", "MPI_Buffer_detach_c", "MPI_Error_string",
    "MPI_Comm_create_errhandler", "MPI_Errhandler_create", "MPI_Win_create_errhandler",
    "MPI_Errhandler_free", "MPI_Comm_set_errhandler", "MPI_Errhandler_set",
    "MPI_Comm_get_errhandler", "MPI_Errhandler_get", "MPI_Comm_call_errhandler",
    "MPI_Win_set_errhandler", "MPI_Win_get_errhandler", "MPI_Win_call_errhandler",
    # comm.cc
    "MPI_Comm_dup", "MPI_Comm_dup_with_info", "MPI_Comm_idup", "MPI_Comm_idup_with_info",
    "MPI_Comm_free", "MPI_Comm_disconnect", "MPI_Comm_size", "MPI_Comm_compare",
    "MPI_Comm_split_type", "MPI_Intercomm_create", "MPI_Comm_set_name", "MPI_Comm_get_name",
    "MPI_Comm_set_info", "MPI_Comm_get_info", "MPI_Topo_test", "MPI_Abort", "MPI_Pack",
    "MPI_Unpack", "MPI_Pack_size", "MPI_Pack_c", "MPI_Unpack_c", "MPI_Pack_size_c",
    "MPI_Comm_create_keyval", "MPI_Keyval_create", "MPI_Comm_free_keyval", "MPI_Keyval_free",
    "MPI_Comm_set_attr", "MPI_Comm_get_attr", "MPI_Comm_delete_attr", "MPI_Attr_put",
    "MPI_Attr_get", "MPI_Attr_delete",
    # request.cc
    "MPI_Wait", "MPI_Test", "MPI_Waitall", "MPI_Testall", "MPI_Waitany", "MPI_Testany",
    "MPI_Waitsome", "MPI_Testsome", "MPI_Request_free", "MPI_Cancel", "MPI_Request_get_status",
    "MPI_Start", "MPI_Startall", "MPI_Grequest_start", "MPI_Grequest_complete", "MPI_Mrecv",
    "MPI_Imrecv", "MPI_Mrecv_c", "MPI_Imrecv_c",
    # group.cc
    "MPI_Group_size", "MPI_Group_rank", "MPI_Group_free", "MPI_Group_translate_ranks",
    "MPI_Group_compare", "MPI_Group_union", "MPI_Group_intersection", "MPI_Group_difference",
    "MPI_Group_incl", "MPI_Group_excl", "MPI_Group_range_incl", "MPI_Group_range_excl",
    # win.cc
    "MPI_Win_free", "MPI_Win_create_keyval", "MPI_Win_free_keyval", "MPI_Win_set_attr",
    "MPI_Win_get_attr", "MPI_Win_delete_attr", "MPI_Win_set_name", "MPI_Win_get_name",
    "MPI_Win_set_info", "MPI_Win_get_info",
}

# Error class of a libep handle given to a call libep has no counterpart of (default: the
# class of the first libep handle's kind).
TOPOLOGY_QUERIES = {
    "MPI_Cart_coords", "MPI_Cart_get", "MPI_Cart_rank", "MPI_Cart_shift", "MPI_Cart_sub",
    "MPI_Cartdim_get", "MPI_Dist_graph_neighbors", "MPI_Dist_graph_neighbors_count",
    "MPI_Graph_get", "MPI_Graph_neighbors", "MPI_Graph_neighbors_count", "MPI_Graphdims_get",
}


def unsupported_class(name):
    if name in TOPOLOGY_QUERIES or "Neighbor_" in name:
        return "MPI_ERR_TOPOLOGY"  # an endpoints communicator has no topology
    return None


HANDLE_KINDS = {"MPI_Comm": "kComm", "MPI_Win": "kWin", "MPI_Request": "kRequest",
                "MPI_Group": "kGroup", "MPI_Message": "kMessage"}
KIND_CLASS = {"kComm": "MPI_ERR_COMM", "kWin": "MPI_ERR_WIN", "kRequest": "MPI_ERR_REQUEST",
              "kGroup": "MPI_ERR_GROUP", "kMessage": "MPI_ERR_REQUEST"}
EP_OF = {"MPI_Comm": "EP_Comm", "MPI_Win": "EP_Win", "MPI_Request": "EP_Request",
         "MPI_Group": "EP_Group", "MPI_Message": "EP_Message", "MPI_Status": "EP_Status"}


class Param:
    def __init__(self, text):
        self.text = " ".join(text.split())
        t = self.text
        self.const = t.startswith("const ")
        m = re.match(r"(?:const )?([A-Za-z_]\w*)\s*(\**)\s*(\w+)\s*((?:\[\w*\])*)$", t)
        if not m:
            raise SystemExit("gen_mpi_wrappers: cannot parse parameter '%s'" % t)
        self.ctype, stars, self.name, self.dims = m.groups()
        self.ptr = len(stars)

    def shape(self):
        return (self.ctype, self.ptr, self.dims)


def parse(text, prefix):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    funcs = {}
    pat = r"^(int|double)\s+(%s\w+)\s*\(([^;]*?)\)\s*(?:\w+(?:\([^)]*\))?\s*)*;" % prefix
    for m in re.finditer(pat, text, re.M):
        ret, name, args = m.group(1), m.group(2), " ".join(m.group(3).split())
        if "..." in args or "(" in args:
            continue  # varargs or function-pointer syntax: no handle to dispatch on
        params = [] if args in ("", "void") else [Param(a) for a in args.split(",")]
        funcs[name] = (ret, params)
    return funcs


def handle_inputs(params):
    """(index, kind) of each libep-capable input handle (by value)."""
    out = []
    for i, p in enumerate(params):
        if p.ctype in HANDLE_KINDS and p.ptr == 0 and not p.dims:
            out.append((i, HANDLE_KINDS[p.ctype]))
    return out


class Unmappable(Exception):
    pass


def match(name, mp, ep, narrow):
    """Per-parameter roles of MPI params mp against EP params ep; raises Unmappable."""
    if len(mp) != len(ep):
        raise Unmappable("%d parameters against %d" % (len(mp), len(ep)))
    roles = []
    for a, b in zip(mp, ep):
        if a.ctype in EP_OF:
            if b.ctype != EP_OF[a.ctype] or a.ptr != b.ptr or a.dims != b.dims:
                raise Unmappable("%s against %s" % (a.text, b.text))
            if a.ptr == 0:
                roles.append("in")
            elif a.ctype == "MPI_Status":
                if a.const:
                    raise Unmappable("const status %s" % a.text)
                roles.append("status")
            else:
                roles.append("out")
            continue
        if a.shape() == b.shape() or (a.ctype == b.ctype and a.ptr == b.ptr and a.dims == b.dims):
            roles.append("same")
            continue
        if narrow and a.ctype in ("MPI_Count", "MPI_Aint") and b.ctype == "int":
            if a.ptr == 0 and not a.dims and b.ptr == 0 and not b.dims:
                roles.append("narrow")
                continue
            if a.dims == "[]" and b.dims == "[]" and a.ptr == 0 and b.ptr == 0 and a.const:
                roles.append("narrow_array")
                continue
            if a.ptr == 1 and b.ptr == 1 and not a.dims and not b.dims and not a.const:
                roles.append("widen_out")
                continue
        raise Unmappable("%s against %s" % (a.text, b.text))
    return roles


def args_of(params):
    return ", ".join(p.name for p in params)


def sig(name, params):
    return "int %s(%s)" % (name, ", ".join(p.text for p in params))


def array_length(name, pname):
    """C expression for the length of a count/displacement array of comm e_."""
    if "Reduce_scatter" in name and pname == "recvcounts":
        return "ep::mpi::local_count(e_)"
    return "ep::mpi::peer_count(e_)"


def gen_mapped(name, params, epname, ep_params, roles):
    order = ["kComm", "kWin", "kRequest", "kGroup", "kMessage"]
    ins = sorted(handle_inputs(params), key=lambda x: order.index(x[1]))
    di, dkind = ins[0]
    d = params[di]
    if dkind not in ("kComm", "kWin", "kRequest"):
        raise Unmappable("dispatch on %s" % dkind)
    # The exported function only dispatches (two tail calls, no stack frame: MPICH's
    # objects, libep's own traffic among them, pay one compare); the libep side is a
    # function of its own, ep_<name>, and for a communicator the lookup of a threadcomm's
    # endpoint (or of a handle that names nothing) is a cold function that tail-calls
    # into the same body: the common path keeps its arguments in their registers.  The
    # error paths find the record again from the handle (out of line): only the handle
    # stays live across the EP_ call.
    plist = ", ".join(p.text for p in params)
    args = args_of(params)
    lines = ["static int ep_%s(%s) __attribute__((noinline));" % (name, plist),
             "extern \"C\" %s {" % sig(name, params),
             "  if (!ep::mpi::is_kind<ep::mpi::Kind::%s>(%s)) return P%s(%s);" %
             (dkind, d.name, name, args),
             "  return ep_%s(%s);" % (name, args),
             "}"]
    q = '"%s"' % name
    if dkind == "kComm":
        lines += ["static inline __attribute__((always_inline)) int on_%s(ep::mpi::Comm* e_, %s);"
                  % (name, plist),
                  "static int slow_%s(%s) __attribute__((noinline, cold));" % (name, plist),
                  "static int ep_%s(%s) {" % (name, plist),
                  "  ep::mpi::Comm* e_ = ep::mpi::endpoint_fast(%s);" % d.name,
                  "  if (e_ == nullptr) return slow_%s(%s);" % (name, args),
                  "  return on_%s(e_, %s);" % (name, args),
                  "}",
                  "static int slow_%s(%s) {" % (name, plist),
                  "  ep::mpi::Comm* e_ = ep::mpi::endpoint_bound(%s);" % d.name,
                  "  if (e_ == nullptr) return ep::mpi::no_endpoint(%s, %s);" % (d.name, q),
                  "  return on_%s(e_, %s);" % (name, args),
                  "}",
                  "static inline int on_%s(ep::mpi::Comm* e_, %s) {" % (name, plist)]
    else:
        lines.append("static int ep_%s(%s) {" % (name, plist))
    if dkind != "kRequest":
        lines.append("  [[maybe_unused]] int err_ = MPI_SUCCESS;")
    if dkind == "kComm":
        obj = "e_"
        raise_ = "ep::mpi::raise_comm(%s, " % d.name
        raise_cls = "ep::mpi::raise_comm_class(%s, " % d.name
    elif dkind == "kWin":
        obj = "w_"
        raise_ = "ep::mpi::raise_win_handle(%s, " % d.name
        raise_cls = "ep::mpi::raise_win_handle_class(%s, " % d.name
        lines.append("  ep::mpi::Win* w_ = ep::mpi::window_fast(%s);" % d.name)
        lines.append("  if (w_ == nullptr) return ep::mpi::no_window(%s, %s);" % (d.name, q))
    else:
        obj = "r_"
        lines.append("  EP_Request r_ = ep::mpi::request_of(%s);" % d.name)
        lines.append("  if (r_ == nullptr) return ep::mpi::invalid_request(%s, %s);" % (d.name, q))
        lines.append("  const int owner_ = ep::mpi::request_owner(%s);" % d.name)
        raise_ = "ep::mpi::raise_owner(owner_, "
        raise_cls = None
    pre, post, actuals = [], [], []
    keep = []  # narrowed arrays of a nonblocking call: kept with its request
    is_nb = any(r == "out" and p.ctype == "MPI_Request" for p, r in zip(params, roles))
    outs = []
    for i, (p, r, e) in enumerate(zip(params, roles, ep_params)):
        n = p.name
        if i == di:
            actuals.append({"kComm": "e_->ep", "kWin": "w_->ep", "kRequest": "r_"}[dkind])
            continue
        if r == "in":
            if p.ctype == "MPI_Group":
                g = "g_%s" % n
                pre.append("  EP_Group %s;" % g)
                fn = "ep_group" if dkind == "kComm" else "ep_group_win"
                pre.append("  if (!ep::mpi::%s(%s, %s, &%s, %s, &err_)) return err_;" %
                           (fn, obj, n, g, q))
                actuals.append(g)
            else:
                raise Unmappable("second input handle %s" % p.text)
        elif r == "out":
            if raise_cls is None:
                raise Unmappable("output handle on a request call")
            t = EP_OF[p.ctype]
            v = "o_%s" % n
            null = {"EP_Comm": "EP_COMM_NULL", "EP_Request": "EP_REQUEST_NULL",
                    "EP_Win": "EP_WIN_NULL", "EP_Group": "EP_GROUP_NULL",
                    "EP_Message": "EP_MESSAGE_NULL"}[t]
            pre.append("  if (%s == nullptr) return %sMPI_ERR_ARG, %s, \"%s is NULL\");" %
                       (n, raise_cls, q, n))
            pre.append("  %s %s = %s;" % (t, v, null))
            actuals.append("&" + v)
            outs.append((p, v))
        elif r == "status":
            v = "s_%s" % n
            pre.append("  EP_Status %s;" % v)
            actuals.append("%s == MPI_STATUS_IGNORE ? EP_STATUS_IGNORE : &%s" % (n, v))
            # (a probe that found nothing leaves the status alone)
            found = " && *flag" if any(x.name == "flag" and x.ptr == 1 for x in params) else ""
            post.append("  if (%s != MPI_STATUS_IGNORE && (rc_ == EP_SUCCESS || rc_ == "
                        "EP_ERR_TRUNCATE)%s) ep::mpi::to_mpi(%s, %s);" % (n, found, v, n))
        elif r == "same":
            actuals.append(n)
        elif r == "narrow":
            cls = "MPI_ERR_COUNT" if p.ctype == "MPI_Count" else "MPI_ERR_ARG"
            pre.append("  if (%s < INT_MIN || %s > INT_MAX) return %s%s, %s, \"%s = %%lld does "
                       "not fit in libep's int\", static_cast<long long>(%s));" %
                       (n, n, raise_cls, cls, q, n, n))
            actuals.append("static_cast<int>(%s)" % n)
        elif r == "narrow_array":
            cls = "MPI_ERR_COUNT" if p.ctype == "MPI_Count" else "MPI_ERR_ARG"
            v = "a_%s" % n
            if is_nb:
                keep.append(v)
                pre.append("  int* %s = nullptr;" % v)
                pre.append("  if (!ep::mpi::narrow(%s, %s, keep_, &%s)) return %s%s, %s, "
                           "\"an entry of %s does not fit in libep's int\");" %
                           (n, array_length(name, n), v, raise_cls, cls, q, n))
            else:
                pre.append("  std::vector<int> %s;" % v)
                pre.append("  if (!ep::mpi::narrow(%s, %s, &%s)) return %s%s, %s, \"an entry "
                           "of %s does not fit in libep's int\");" %
                           (n, array_length(name, n), v, raise_cls, cls, q, n))
            actuals.append("%s == nullptr ? nullptr : %s" % (n, v if is_nb else v + ".data()"))
        elif r == "widen_out":
            v = "w_%s" % n
            pre.append("  int %s = 0;" % v)
            actuals.append("%s == nullptr ? nullptr : &%s" % (n, v))
            post.append("  if (rc_ == EP_SUCCESS && %s != nullptr) *%s = %s;" % (n, n, v))
        else:
            raise AssertionError(r)
    if keep:
        lines.append("  std::unique_ptr<ep::mpi::Keep> keep_(new ep::mpi::Keep);")
    lines += pre
    lines.append("  const int rc_ = %s(%s);" % (epname, ", ".join(actuals)))
    lines += post
    lines.append("  if (rc_ != EP_SUCCESS) return %src_, %s);" % (raise_, q))
    for p, v in outs:
        owner = d.name
        if p.ctype == "MPI_Request":
            extra = ", keep_.release()" if keep else ""
            lines.append("  err_ = ep::mpi::make_request(%s, %s, %s, %s%s);" %
                         (v, owner, p.name, q, extra))
        elif p.ctype == "MPI_Comm":
            lines.append("  err_ = ep::mpi::make_comm(%s, e_, nullptr, %s, %s);" % (v, p.name, q))
        elif p.ctype == "MPI_Win":
            lines.append("  err_ = ep::mpi::make_win(%s, e_, %s, %s);" % (v, p.name, q))
        elif p.ctype == "MPI_Group":
            lines.append("  err_ = ep::mpi::make_group(%s, %s);" % (v, p.name))
        elif p.ctype == "MPI_Message":
            lines.append("  err_ = ep::mpi::make_message(%s, %s, %s);" % (v, owner, p.name))
        lines.append("  if (err_ != MPI_SUCCESS) return err_;")
    lines.append("  return MPI_SUCCESS;")
    lines.append("}")
    return "\n".join(lines)


def gen_unsupported(name, params, cls):
    ins = handle_inputs(params)
    cond = " && ".join("!ep::mpi::is_ep(%s)" % params[i].name for i, _ in ins)
    lines = ["extern \"C\" %s {" % sig(name, params),
             "  if (%s) return P%s(%s);" % (cond, name, args_of(params))]
    for j, (i, k) in enumerate(ins):
        n = params[i].name
        c = cls or KIND_CLASS[k]
        call = "ep::mpi::unsupported(%s, %s, \"%s\")" % (n, c, name)
        if j + 1 == len(ins):  # the last libep-capable handle: it is libep's
            lines.append("  return %s;" % call)
        else:
            lines.append("  if (ep::mpi::is_ep(%s)) return %s;" % (n, call))
    lines.append("}")
    return "\n".join(lines)


def main(argv):
    report = "--report" in argv
    argv = [a for a in argv if a != "--report"]
    if len(argv) != 6:
        raise SystemExit(__doc__)
    _, proto_h, mpio_h, ep_h, out_cc, out_h = argv
    proto = open(proto_h).read()
    cut = proto.find("\nint PMPI_")
    mpi = parse(proto[:cut] if cut > 0 else proto, "MPIX?_")
    for n, v in parse(open(mpio_h).read(), "MPI_File_").items():
        if n not in mpi:
            mpi[n] = v
    ep = parse(open(ep_h).read(), "EP_")

    for n in sorted(BY_HAND):
        if n not in mpi:
            raise SystemExit("gen_mpi_wrappers: %s (by hand) is not in %s" % (n, proto_h))

    mapped, unsupported, bodies = [], [], []
    for name in sorted(mpi):
        if name in BY_HAND:
            continue
        ret, params = mpi[name]
        if ret != "int" or not handle_inputs(params) or name.endswith("_FN"):
            continue
        base = name[len("MPIX_"):] if name.startswith("MPIX_") else name[len("MPI_"):]
        candidates = [("EP_" + base, False)]
        if base.endswith("_c"):
            candidates.append(("EP_" + base[:-2], True))
        done = False
        for epname, narrow in candidates:
            if epname not in ep or name.startswith("MPIX_"):
                continue
            try:
                roles = match(name, params, ep[epname][1], narrow)
                bodies.append(gen_mapped(name, params, epname, ep[epname][1], roles))
                mapped.append("%s -> %s" % (name, epname))
                done = True
                break
            except Unmappable as why:
                if not narrow:
                    raise SystemExit("gen_mpi_wrappers: %s has %s in ep.h but cannot map it "
                                     "(%s): list it in BY_HAND and write it" %
                                     (name, epname, why))
        if not done:
            bodies.append(gen_unsupported(name, params, unsupported_class(name)))
            unsupported.append(name)

    with open(out_cc, "w") as f:
        f.write("// Generated by mpi/gen_mpi_wrappers.py from MPICH's mpi_proto.h and ep.h: "
                "do not edit.\n")
        f.write("#include <mpi.h>\n\n#include <climits>\n#include <memory>\n#include <vector>\n\n")
        f.write("#include \"ep/ep.h\"\n#include \"mpi/layer.h\"\n#include \"mpi/status.h\"\n")
        f.write("#include \"mpi/wrappers.h\"\n\n")
        f.write("\n\n".join(bodies))
        f.write("\n")
    with open(out_h, "w") as f:
        f.write("// Generated by mpi/gen_mpi_wrappers.py: the functions of ep.h "
                "(EP_MPI_HAVE_<name>).\n")
        f.write("#ifndef EP_MPI_WRAPPERS_H_\n#define EP_MPI_WRAPPERS_H_\n")
        for n in sorted(ep):
            f.write("#define EP_MPI_HAVE_%s 1\n" % n)
        f.write("#endif  // EP_MPI_WRAPPERS_H_\n")
    if report:
        print("mapped (%d):" % len(mapped))
        for m in mapped:
            print("  " + m)
        print("by hand (%d):" % len(BY_HAND))
        for m in sorted(BY_HAND):
            print("  " + m)
        print("no libep counterpart (%d):" % len(unsupported))
        for m in unsupported:
            print("  " + m)


if __name__ == "__main__":
    main(sys.argv)
