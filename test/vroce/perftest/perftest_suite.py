#!/usr/bin/env python3
"""Debian's unmodified perftest (and ibv_rc_pingpong, ibv_devinfo) over vroce.

Each case runs a perftest server and client, each in its own process on its own vroce device
(LD_LIBRARY_PATH=<vroce lib dir>), and requires what a ConnectX gives: both exit 0, the client
reports its figures, and vroce's counters (VROCE_STATS_FILE) show no error completion on either
side. Suites:

  basic   send/write/read, latency and bandwidth, a few sizes; ibv_rc_pingpong; ibv_devinfo
  load    latency and bandwidth cases while CPU burners keep every core busy (load average of
          4 per core): timers must not kill a connection on which no packet was lost
  loss    bandwidth cases with 0.2% of the server's packets dropped (VROCE_FAULTS), among them
          ib_read_bw with 16 READs outstanding: every run recovers

Iteration counts are small so that the suite stays cheap; nothing here measures time. Exit 0
on success, 1 on a failed case, 77 (skip) when perftest is not installed.

  perftest_suite.py --lib <dir holding libibverbs.so.1> --suite basic|load|loss [--base A]
                    [--budget SECONDS]

--budget (ctest passes its TIMEOUT less a margin) bounds the whole suite: a case still running
when it is spent fails with both sides' logs, rather than the suite being killed by ctest with
no word of which case hung or why.
"""
import argparse
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from hang_bound import HANG_BOUND_S  # noqa: E402  (one bound for every suite)

SKIP = 77
CASE_TIMEOUT_S = 180  # generous: a loaded 2-core machine runs these slowly


class Failure(Exception):
    pass


class ClockCalibrationFailed(Exception):
    """perftest's client could not measure its cycle counter's rate; see Runner.pair."""


# What perftest's client prints when its clock fit fails (get_clock.c), and the report it then
# refuses to print.
CLOCK_FIT_FAILED = "Correlation coefficient r^2"
NO_REPORT = "Can't produce a report"
CLOCK_ATTEMPTS = 3


def errors_in(completions):
    """One side's error completions from its vroce counters: every status but success, non-zero."""
    return {k: v for k, v in completions.items() if k != "success" and v}


def listening(port):
    """True once some socket listens on TCP `port` (perftest's server opens it after its device)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                return True
    return False


class Runner:
    def __init__(self, lib, base, work, budget_s=None):
        self.lib = lib
        self.deadline = None if budget_s is None else time.monotonic() + budget_s
        first = ipaddress.ip_address(base)
        self.server_ip, self.client_ip = str(first), str(first + 1)
        self.work = work
        self.port = 20000 + os.getpid() % 20000
        self.results = []

    def next_free_port(self):
        """The next TCP port after the last one used that nothing holds now: perftest's server
        cannot listen on a port another socket has (an outgoing connection of an earlier case
        may hold any port of the ephemeral range)."""
        while True:
            self.port = 20000 if self.port >= 65535 else self.port + 1
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                probe.bind(("0.0.0.0", self.port))
                return self.port
            except OSError:
                continue
            finally:
                probe.close()

    def env(self, extra, stats):
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = self.lib
        env["VROCE_DEVICES"] = f"vrS={self.server_ip},vrC={self.client_ip}"
        env["VROCE_STATS_FILE"] = str(stats)
        env.update(extra)
        return env

    def pair(self, name, prog, args, server_env=None, client_env=None, gid_flag="-x"):
        """Runs `prog args` as server on vrS and client on vrC; returns (client output, stats).

        perftest times itself with the CPU's cycle counter, whose rate it measures first by
        regressing the counter against gettimeofday over about a second of busy waiting; where
        the host preempts it often (the load suite) the fit can come out below r^2 0.9, and the
        client then exits 1 with "Can't produce a report" after a transfer that went well. Such
        a run is run again, up to CLOCK_ATTEMPTS times, provided vroce's counters show no error
        completion on either side: it says nothing about the transport, and anything else that
        fails a run fails the case at once."""
        for attempt in range(1, CLOCK_ATTEMPTS + 1):
            try:
                return self.pair_once(name, prog, args, server_env, client_env, gid_flag)
            except ClockCalibrationFailed as failure:
                if attempt == CLOCK_ATTEMPTS:
                    raise Failure(f"{name}: perftest could not measure its clock in "
                                  f"{CLOCK_ATTEMPTS} runs\n{failure}")
                print(f"note: {name}: perftest could not measure its clock (r^2 < 0.9, the "
                      f"host preempted its calibration); vroce saw no error: run {attempt + 1}",
                      flush=True)
        raise AssertionError("unreachable")

    def pair_once(self, name, prog, args, server_env, client_env, gid_flag):
        port = self.next_free_port()
        files = {side: (self.work / f"{name}.{side}.log", self.work / f"{name}.{side}.json")
                 for side in ("server", "client")}
        common = [gid_flag, "3", "-p", str(port)] + args
        bound, why = CASE_TIMEOUT_S, f"no result within {CASE_TIMEOUT_S} s"
        if self.deadline is not None and self.deadline - time.monotonic() < bound:
            bound = max(1, int(self.deadline - time.monotonic()))
            why = f"no result within {bound} s, when the suite's --budget ran out"
        print(f"start: {name}", flush=True)
        with open(files["server"][0], "w") as out:
            server = subprocess.Popen([prog, "-d", "vrS"] + common, stdout=out,
                                      stderr=subprocess.STDOUT,
                                      env=self.env(server_env or {}, files["server"][1]))
        try:
            for _ in range(600):  # up to 60 s for the server to open its device and listen
                if listening(port) or server.poll() is not None:
                    break
                time.sleep(0.1)
            with open(files["client"][0], "w") as out:
                client = subprocess.run([prog, "-d", "vrC"] + common + [self.server_ip],
                                        stdout=out, stderr=subprocess.STDOUT,
                                        env=self.env(client_env or {}, files["client"][1]),
                                        timeout=bound)
            server_rc = server.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            raise Failure(f"{name}: {why}\n" + self.logs(files))
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
        if client.returncode != 0 or server_rc != 0:
            message = (f"{name}: client exited {client.returncode}, server {server_rc}\n" +
                       self.logs(files))
            client_log = files["client"][0].read_text(errors="replace")
            if (CLOCK_FIT_FAILED in client_log and NO_REPORT in client_log and
                    not self.error_completions(files)):
                raise ClockCalibrationFailed(message)
            raise Failure(message)
        stats = {}
        for side, (_, json_path) in files.items():
            try:
                stats[side] = json.loads(json_path.read_text())
            except (OSError, ValueError) as error:
                raise Failure(f"{name}: no counters from the {side} ({error})\n" +
                              self.logs(files))
            bad = errors_in(stats[side]["completions"])
            if bad:
                raise Failure(f"{name}: {side} had error completions {bad}\n" + self.logs(files))
            if stats[side]["live"]["qps"] != 0:
                raise Failure(f"{name}: {side} left QPs behind: {stats[side]['live']}")
            # On the shared-memory wire every packet between the two goes through the rings.
            if os.environ.get("VROCE_WIRE") == "shm" and stats[side]["shm_received"] == 0:
                raise Failure(f"{name}: VROCE_WIRE=shm but the {side} read nothing from its "
                              "inbox\n" + self.logs(files))
        return files["client"][0].read_text(), stats

    @staticmethod
    def error_completions(files):
        """The error completions vroce counted on either side (a side without counters counts
        as one: nothing proves it had none)."""
        bad = {}
        for side, (_, json_path) in files.items():
            try:
                completions = json.loads(json_path.read_text())["completions"]
            except (OSError, ValueError, KeyError):
                bad[side] = "no counters"
                continue
            bad.update({f"{side} {k}": v for k, v in errors_in(completions).items()})
        return bad

    @staticmethod
    def logs(files):
        text = []
        for side, (log, _) in files.items():
            try:
                body = log.read_text()
            except OSError:
                body = "(none)"
            text.append(f"--- {side}\n{body[-3000:]}")
        return "\n".join(text)

    def perftest(self, name, prog, args, **kwargs):
        output, stats = self.pair(name, prog, args, **kwargs)
        figures = None
        lines = output.splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith("#bytes"):
                for data in lines[i + 1:]:
                    fields = data.split()
                    if len(fields) >= 4 and fields[0].isdigit():
                        figures = (line.split(), fields)
                        break
        if figures is None:
            raise Failure(f"{name}: the client printed no result line\n{output[-3000:]}")
        header, fields = figures
        if "t_typical[usec]" in header:
            figure = f"t_typical {fields[header.index('t_typical[usec]')]} us"
        else:
            figure = f"BW average {fields[3]} Gb/s"
        def total(key):
            return sum(stats[side][key] for side in stats)
        drops = sum(stats[side]["faults_injected"]["drop"] for side in stats)
        self.results.append(f"ok: {name}: {figure}; ack timeouts {total('ack_timeouts')}, "
                            f"retransmitted {total('retransmitted_packets')}, scheduling stalls "
                            f"{total('scheduling_stalls')}, injected drops {drops}")
        print(self.results[-1], flush=True)
        return stats


def latency_cases(runner, sizes, iters):
    for prog in ("ib_send_lat", "ib_write_lat", "ib_read_lat"):
        for size in sizes:
            runner.perftest(f"{prog}-{size}", prog, ["-s", str(size), "-n", str(iters)])


def bandwidth_cases(runner, sizes, iters, **kwargs):
    for prog in ("ib_send_bw", "ib_write_bw", "ib_read_bw"):
        for size, count in zip(sizes, iters):
            runner.perftest(f"{prog}-{size}", prog,
                            ["-s", str(size), "-n", str(count), "--report_gbits"], **kwargs)


def basic(runner):
    latency_cases(runner, [8, 4096, 65536], 500)
    bandwidth_cases(runner, [8, 65536, 1 << 20], [500, 500, 100])
    # Completion events rather than busy polling, where perftest allows them (not for WRITE).
    runner.perftest("ib_send_lat-events", "ib_send_lat", ["-s", "8", "-n", "300", "-e"])
    runner.perftest("ib_read_lat-events", "ib_read_lat", ["-s", "8", "-n", "300", "-e"])
    runner.perftest("ib_send_bw-events", "ib_send_bw",
                    ["-s", "65536", "-n", "300", "-e", "--report_gbits"])
    # ConnectX-7's ids (VROCE_IDENTITY): perftest keeps inline data; its ibv_qp_ex post API,
    # which vroce refuses with a warning, is avoided with --use_old_post_send.
    cx7 = {"VROCE_IDENTITY": "connectx7"}
    output, _ = runner.pair("ib_send_lat-connectx7-inline", "ib_send_lat",
                            ["-s", "8", "-n", "300", "-I", "64", "--use_old_post_send"],
                            server_env=cx7, client_env=cx7)
    if "Max inline data : 64[B]" not in output:
        raise Failure("ib_send_lat -I 64 on VROCE_IDENTITY=connectx7 did not inline\n" + output)
    print("ok: ib_send_lat-connectx7-inline", flush=True)
    # Debian's ibv_rc_pingpong (its -g is our -x) and ibv_devinfo.
    for name, args in (("ibv_rc_pingpong", ["-n", "300"]),
                       ("ibv_rc_pingpong-events", ["-n", "300", "-e", "-s", "65536"])):
        output, _ = runner.pair(name, "ibv_rc_pingpong", args, gid_flag="-g")
        if "300 iters in" not in output:
            raise Failure(f"{name}: no iteration report\n{output}")
        print(f"ok: {name}: {output.strip().splitlines()[-1]}", flush=True)
    env = runner.env({}, runner.work / "devinfo.json")
    devinfo = subprocess.run(["ibv_devinfo", "-v", "-d", "vrS"], capture_output=True, text=True,
                             env=env, timeout=HANG_BOUND_S)
    if devinfo.returncode != 0 or "PORT_ACTIVE" not in devinfo.stdout:
        raise Failure(f"ibv_devinfo -v failed ({devinfo.returncode})\n{devinfo.stdout}"
                      f"{devinfo.stderr}")
    if "invalid value" in devinfo.stdout:
        raise Failure("ibv_devinfo -v reports an invalid value:\n" + devinfo.stdout)
    print("ok: ibv_devinfo -v", flush=True)


class Burners:
    """Busy processes, by default four per CPU (the load suite's), until stop()."""

    def __init__(self, count=None):
        count = 4 * (os.cpu_count() or 1) if count is None else count
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(count)]
        print(f"note: {count} CPU burners running", flush=True)

    def stop(self):
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()


def load(runner):
    burners = Burners()
    try:
        # perftest's own timers: timeout 14 (67 ms), retry_cnt 7.
        latency_cases(runner, [8, 4096], 300)
        bandwidth_cases(runner, [65536, 1 << 20], [200, 50])
        output, _ = runner.pair("ibv_rc_pingpong-4096", "ibv_rc_pingpong",
                                ["-n", "200", "-s", "4096"], gid_flag="-g")
        print(f"ok: ibv_rc_pingpong-4096 under load: {output.strip().splitlines()[-1]}",
              flush=True)
    finally:
        burners.stop()
    with open("/proc/loadavg") as f:
        print(f"note: load average after the suite: {f.read().split()[0]}")


def loss(runner):
    # Drops on the server's transmissions: READ responses for ib_read_bw, ACKs otherwise.
    for seed in (1, 2, 3):
        faults = {"VROCE_FAULTS": f"drop=0.002,seed={seed}"}
        stats = runner.perftest(f"ib_read_bw-o16-drop-seed{seed}", "ib_read_bw",
                                ["-s", "65536", "-n", "300", "-o", "16", "--report_gbits"],
                                server_env=faults)
        if stats["server"]["faults_injected"]["drop"] == 0:
            raise Failure(f"seed {seed}: no READ response was dropped; the case tests nothing")
    faults = {"VROCE_FAULTS": "drop=0.002,seed=4"}
    runner.perftest("ib_write_bw-drop", "ib_write_bw",
                    ["-s", "65536", "-n", "300", "--report_gbits"], client_env=faults)
    runner.perftest("ib_send_bw-drop", "ib_send_bw",
                    ["-s", "65536", "-n", "300", "--report_gbits"], client_env=faults)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True)
    parser.add_argument("--suite", choices=["basic", "load", "loss"], required=True)
    parser.add_argument("--base", default=None,
                        help="server address; the client gets the next (default: the first of "
                        "ROCE_TEST_ADDRESSES, the block with_test_addresses claimed for this run)")
    parser.add_argument("--budget", type=int, default=None,
                        help="seconds the whole suite may take (below ctest's TIMEOUT)")
    args = parser.parse_args()
    needed = ["ib_send_lat", "ib_read_bw", "ibv_rc_pingpong", "ibv_devinfo"]
    missing = [p for p in needed if shutil.which(p) is None]
    if missing:
        print(f"SKIP: {' '.join(missing)} not installed (apt-get install perftest ibverbs-utils)")
        return SKIP
    base = args.base or os.environ.get("ROCE_TEST_ADDRESSES", "").split(" ")[0]
    if not base:
        print("error: no --base and no ROCE_TEST_ADDRESSES: run this under test/support's "
              "with_test_addresses, or name the server address with --base", file=sys.stderr)
        return 2
    lib = str(Path(args.lib).resolve())
    with tempfile.TemporaryDirectory(prefix="vr-perftest.") as work:
        runner = Runner(lib, base, Path(work), args.budget)
        try:
            {"basic": basic, "load": load, "loss": loss}[args.suite](runner)
        except Failure as failure:
            print(f"FAIL: {failure}")
            return 1
    print(f"PASS: {len(runner.results)} perftest cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
