#!/usr/bin/env python3
"""Entry point of the chaos tests (see docs/reliability.md, "Faults").

    FBSESSIOND=.build/debug/fbsessiond tools/chaos/run [--quick] [--only pg-restart,kill9,...] [--keep]

Each test starts its own PostgreSQL cluster, Graph emulator and service processes, and ends them in a `finally`.
Prints PASS/FAIL lines with figures and exits non-zero when any check failed.
"""

import argparse
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checks  # noqa: E402
import stack as stacklib  # noqa: E402
import test_graph_faults  # noqa: E402
import test_instances  # noqa: E402
import test_kill9  # noqa: E402
import test_pg_restart  # noqa: E402
import test_rotation  # noqa: E402

TESTS = [
    ("pg-restart", test_pg_restart.run),
    ("kill9", test_kill9.run),
    ("graph-faults", test_graph_faults.run),
    ("instances", test_instances.run),
    ("rotation", test_rotation.run),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short durations (CI): under 4 minutes")
    parser.add_argument("--only", default="", help="comma-separated test names: " + ", ".join(n for n, _ in TESTS))
    parser.add_argument("--keep", action="store_true", help="keep each test's work directory (logs)")
    parser.add_argument("--outage", type=float, default=None,
                        help="Graph outage seconds (default 60, or 12 with --quick)")
    parser.add_argument("--pg-stop", default="fast", choices=["smart", "fast", "immediate"],
                        help="pg_ctl stop mode for pg-restart (default fast; immediate is a crash)")
    options = parser.parse_args()
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    binary = os.path.abspath(os.environ.get("FBSESSIOND", os.path.join(root, ".build/debug/fbsessiond")))
    if not os.access(binary, os.X_OK):
        sys.exit(f"error: no fbsessiond binary at {binary} (build first, or set FBSESSIOND)")
    wanted = [n for n in options.only.split(",") if n] or [n for n, _ in TESTS]
    unknown = set(wanted) - {n for n, _ in TESTS}
    if unknown:
        sys.exit(f"error: unknown test(s): {', '.join(sorted(unknown))}")

    # SIGTERM/SIGINT end the run through the `finally` blocks below, which end every process started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    mode = "quick" if options.quick else "full"
    print(f"chaos ({mode}) with {binary}", flush=True)
    for name, test in TESTS:
        if name not in wanted:
            continue
        print(f"== {name}", flush=True)
        test_started = time.monotonic()
        stack = None
        try:
            stack = stacklib.Stack(binary, root, keep=options.keep, name=f"chaos-{name}")
            kwargs = {"graph-faults": {"outage": options.outage},
                      "pg-restart": {"stop_mode": options.pg_stop}}.get(name, {})
            test(stack, options.quick, **kwargs)
        except Exception as error:  # a crashed test is a failed test, with its reason
            traceback.print_exc(limit=3)
            checks.verdict(f"{name}/ran", False, f"{type(error).__name__}: {error}")
        finally:
            if stack is not None:
                stack.close()
        print(f"   {name} took {time.monotonic() - test_started:.0f}s", flush=True)
    failed = [line for _, ok, line in checks.RESULTS if not ok]
    print(f"chaos ({mode}): {len(checks.RESULTS) - len(failed)} passed, {len(failed)} failed "
          f"in {time.monotonic() - started:.0f}s", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
