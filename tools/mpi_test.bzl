"""Test macros for libep.

ep_mpi_test: a googletest program run under `mpiexec -n NP` for each NP in `nps`.
ep_cc_test:  a plain (non-MPI) googletest cc_test; picks up TSAN suppressions under
             --config=tsan.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_test")

_GTEST = "@gtest//:gtest"
_GTEST_MAIN = "@gtest//:gtest_main"
_MPICH = "@mpich//:mpich"
_WRAPPER = "//tools:mpirun_test.sh"
_TSAN_SUPP = "//tools:tsan.supp"

def _bazel_timeout(seconds):
    """Smallest Bazel timeout class that leaves room for `seconds` plus wrapper slack."""
    if seconds + 20 <= 60:
        return "short"
    if seconds + 20 <= 300:
        return "moderate"
    if seconds + 20 <= 900:
        return "long"
    return "eternal"

def ep_mpi_test(
        name,
        srcs,
        deps = [],
        nps = [1, 2, 3],
        env = {},
        size = "medium",
        tags = [],
        timeout_s = 240,
        data = [],
        copts = [],
        linkopts = [],
        **kwargs):
    """Googletest-based MPI test run with `mpiexec -n NP` for each NP in `nps`.

    The sources must provide main(): MPI_Init_thread(MPI_THREAD_MULTIPLE), InitGoogleTest,
    RUN_ALL_TESTS, MPI_Finalize. That is why @gtest//:gtest_main is NOT linked in.

    Creates:
      <name>_bin      testonly cc_binary (the test program)
      <name>_np<NP>   sh_test running tools/mpirun_test.sh <name>_bin NP timeout_s
      <name>          test_suite of all <name>_np<NP>

    Args:
      name: base name.
      srcs: C++ sources (googletest, with their own main()).
      deps: extra deps; @gtest//:gtest and @mpich//:mpich are always added.
      nps: process counts to run with.
      env: extra environment for every process (dict).
      size: Bazel test size (resource hint).
      tags: tags for every generated test (e.g. "stress"); "mpi" is always added.
      timeout_s: hard wall-clock limit enforced by the wrapper (`timeout`); the Bazel
        timeout class is chosen to exceed it.
      data: runtime data files for the tests.
      copts, linkopts: passed to the cc_binary.
      **kwargs: passed to every sh_test (e.g. flaky, shard_count is NOT meaningful).
    """
    bin_name = name + "_bin"
    all_deps = list(deps)
    for d in [_GTEST, _MPICH]:
        if d not in all_deps:
            all_deps.append(d)

    cc_binary(
        name = bin_name,
        srcs = srcs,
        deps = all_deps,
        copts = copts,
        linkopts = linkopts,
        testonly = True,
        tags = tags,
        visibility = ["//visibility:private"],
    )

    test_tags = list(tags)
    if "mpi" not in test_tags:
        test_tags.append("mpi")

    tests = []
    for np in nps:
        test_name = "%s_np%d" % (name, np)
        tests.append(":" + test_name)
        native.sh_test(
            name = test_name,
            srcs = [_WRAPPER],
            args = [
                "$(location :%s)" % bin_name,
                str(np),
                str(timeout_s),
            ],
            data = [":" + bin_name, _TSAN_SUPP] + data,
            env = env,
            size = size,
            timeout = _bazel_timeout(timeout_s),
            # Reserve NP CPUs so Bazel does not oversubscribe the machine with concurrent MPI
            # jobs (a request above the machine's size runs when nothing else does).
            tags = test_tags + ["cpu:%d" % np],
            **kwargs
        )

    native.test_suite(
        name = name,
        tests = tests,
        tags = tags,
    )

def ep_cc_test(
        name,
        srcs,
        deps = [],
        env = {},
        data = [],
        tags = [],
        main = True,
        **kwargs):
    """Plain googletest cc_test (no mpiexec). Links @gtest//:gtest_main unless main = False.

    Under --config=tsan the test gets tools/tsan.supp via TSAN_OPTIONS (it is harmless
    otherwise); any TSAN_OPTIONS passed with --test_env replace this default.
    """
    all_deps = list(deps)
    g = _GTEST_MAIN if main else _GTEST
    if g not in all_deps:
        all_deps.append(g)
    test_env = {
        "TSAN_OPTIONS": "suppressions=$(location %s) halt_on_error=1 second_deadlock_stack=1" % _TSAN_SUPP,
        "UCX_MEM_EVENTS": "no",
    }
    test_env.update(env)
    cc_test(
        name = name,
        srcs = srcs,
        deps = all_deps,
        data = data + [_TSAN_SUPP],
        env = test_env,
        tags = tags,
        **kwargs
    )
