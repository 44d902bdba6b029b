#!/usr/bin/env python3
"""perftest_suite.py's one retry rule, against a stand-in perftest (no vroce, no perftest needed).

perftest_suite.Runner runs a perftest case again when, and only when, the client failed because
perftest could not measure its clock and vroce's counters show no error completion on either
side. The stand-in below plays both sides of a case: the server listens on its -p port, the
client connects, each writes the counters vroce would write (VROCE_STATS_FILE), and the client
fails its clock fit for as many runs as FAKE_CLOCK_FAILURES says. Exit 0 when every check holds.
"""
import os
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perftest_suite  # noqa: E402

FAKE = textwrap.dedent('''\
    #!/usr/bin/env python3
    import json, os, socket, sys
    from pathlib import Path
    args = sys.argv[1:]
    port = int(args[args.index("-p") + 1])
    client = not args[-1].startswith("-") and args[-1].count(".") == 3
    errors = int(os.environ.get("FAKE_ERROR_COMPLETIONS", "0"))
    Path(os.environ["VROCE_STATS_FILE"]).write_text(json.dumps(
        {"completions": {"success": 10, "retry_exc_err": errors}, "live": {"qps": 0},
         "ack_timeouts": 0, "retransmitted_packets": 0, "scheduling_stalls": 0,
         "faults_injected": {"drop": 0}}))
    if not client:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("0.0.0.0", port))
            s.listen(1)
            conn, _ = s.accept()
            conn.recv(1)
            conn.close()
        sys.exit(0)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"x")
    runs = Path(os.environ["FAKE_RUNS"])
    run = int(runs.read_text()) + 1 if runs.exists() else 1
    runs.write_text(str(run))
    if run <= int(os.environ["FAKE_CLOCK_FAILURES"]):
        print("Correlation coefficient r^2: 0.89 < 0.9")
        print("Can't produce a report")
        sys.exit(1)
    print(" #bytes #iterations t_min[usec] t_max[usec] t_typical[usec]")
    print(" 8 300 5.00 9.00 6.00")
''')


def run_case(work, clock_failures, error_completions=0):
    """Runs one case through Runner.perftest; returns (the outcome, how many runs were made)."""
    runs = work / f"runs.{clock_failures}.{error_completions}"
    os.environ.update(FAKE_RUNS=str(runs), FAKE_CLOCK_FAILURES=str(clock_failures),
                      FAKE_ERROR_COMPLETIONS=str(error_completions))
    runner = perftest_suite.Runner("/nonexistent", "127.0.0.1", work)
    try:
        runner.perftest("fake_lat-8", str(work / "fake_perftest"), ["-s", "8"])
        outcome = "pass"
    except perftest_suite.Failure as failure:
        outcome = f"fail: {str(failure).splitlines()[0]}"
    return outcome, int(runs.read_text())


def main():
    failures = []
    with tempfile.TemporaryDirectory(prefix="vr-clock-retry.") as tmp:
        work = Path(tmp)
        fake = work / "fake_perftest"
        fake.write_text(FAKE)
        fake.chmod(0o755)
        attempts = perftest_suite.CLOCK_ATTEMPTS
        cases = [
            # (clock failures, error completions, expected outcome prefix, expected runs)
            (0, 0, "pass", 1),
            (attempts - 1, 0, "pass", attempts),  # retried until it measured its clock
            (attempts, 0, "fail: fake_lat-8: perftest could not measure its clock", attempts),
            (1, 1, "fail: fake_lat-8: client exited 1", 1),  # an error completion: no retry
        ]
        for clock_failures, errors, expected, expected_runs in cases:
            outcome, runs = run_case(work, clock_failures, errors)
            verdict = "ok" if outcome.startswith(expected) and runs == expected_runs else "FAIL"
            print(f"{verdict}: {clock_failures} clock failures, {errors} error completions: "
                  f"{outcome} after {runs} runs (expected {expected}, {expected_runs} runs)")
            if verdict != "ok":
                failures.append(outcome)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
