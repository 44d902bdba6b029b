#!/usr/bin/env python3
"""roce-bench behaves like nccl-tests: rows stream, Ctrl-C keeps them, launchers' variables work.

usage: stream_interrupt_test.py interrupt ROCE_BENCH --to group|launcher [ARGS...]
       stream_interrupt_test.py job-env ROCE_BENCH torchrun|openmpi|slurm

interrupt: starts roce-bench ARGS --json=FILE in a session of its own, reads its stdout line by
  line and, once the first row of the table is there and the run is still going (the row came
  out before the end: it streams), sends SIGINT to the whole process group (what Ctrl-C on a
  terminal does: --to group) or to the launcher alone (kill -INT: --to launcher). roce-bench
  must then exit with 130, keep the printed rows on stdout, say it was interrupted, and write
  JSON holding exactly the printed rows, marked "interrupted": true, status "interrupted".
job-env: starts two ranks by hand, each with only the launcher's variables (torchrun: RANK,
  WORLD_SIZE, MASTER_ADDR, MASTER_PORT; Open MPI: OMPI_COMM_WORLD_RANK/SIZE; Slurm:
  SLURM_PROCID/SLURM_NTASKS, both with MASTER_ADDR/MASTER_PORT) and no --rank; both must pass
  and rank 0 must name where its rank came from.
Run under with_test_addresses --vroce-devices A,B[,...] with NCCL_IBVERBS_LIB set to vroce.
A hang is a failure (every wait has a deadline); no figure is compared with a time.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading

DEADLINE_S = 180


def fail(message, *texts):
    print(f"FAIL: {message}", file=sys.stderr)
    for t in texts:
        print(t, file=sys.stderr)
    sys.exit(1)


def is_row(line):
    """A row of a table (8 columns or more), not of the plugin/raw comparison (4)."""
    fields = line.split()
    return len(fields) >= 8 and not line.startswith("#") and fields[0].isdigit()


def interrupt(bench, to, args):
    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "out.json")
        cmd = [bench, *args, f"--json={json_path}"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        # A hang is a failure: past the deadline the whole group is killed, which ends the reads.
        watchdog = threading.Timer(DEADLINE_S, os.killpg, (proc.pid, signal.SIGKILL))
        watchdog.start()
        try:
            lines = []
            while True:
                line = proc.stdout.readline()
                if line == "":
                    proc.wait()
                    fail(f"stdout ended (exit {proc.returncode}) before a row came out, or no row "
                         f"within {DEADLINE_S} s", "".join(lines), proc.stderr.read())
                lines.append(line)
                if is_row(line):
                    break
            # The row is here and the process has not ended: it came out while the run went on.
            if proc.poll() is not None:
                fail(f"the first row came out only as roce-bench ended (exit {proc.returncode}): "
                     "rows are not streamed, or the sweep is too short for this test",
                     "".join(lines))
            if os.path.exists(json_path):
                fail("the JSON was written before the run ended")
            if to == "group":
                os.killpg(proc.pid, signal.SIGINT)
            else:
                os.kill(proc.pid, signal.SIGINT)
            rest = proc.stdout.read()
            err = proc.stderr.read()
            proc.wait()
        finally:
            watchdog.cancel()
        if proc.returncode == -signal.SIGKILL:
            fail(f"roce-bench did not stop within {DEADLINE_S} s", "".join(lines) + rest, err)
        out = "".join(lines) + rest
        if proc.returncode != 130:
            fail(f"exit status {proc.returncode}, expected 130", out, err)
        if "# interrupted (SIGINT):" not in out:
            fail("stdout does not say the run was interrupted", out, err)
        if "interrupted (SIGINT)" not in err:
            fail("stderr does not say the run was interrupted", out, err)
        printed = [int(l.split()[0]) for l in out.splitlines() if is_row(l)]
        try:
            doc = json.load(open(json_path))
        except (OSError, ValueError) as e:
            fail(f"no JSON document in --json: {e}", out, err)
        if doc.get("interrupted") is not True or doc.get("status") != "interrupted":
            fail(f"JSON interrupted={doc.get('interrupted')!r} status={doc.get('status')!r}, "
                 "expected true and 'interrupted'", out)
        in_json = [r["size"] for s in doc["series"] for r in s["rows"]]
        if not printed or sorted(in_json) != sorted(printed):
            fail(f"the JSON's rows {in_json} are not the printed rows {printed}", out)
        if doc.get("wrong_total") != 0:
            fail("wrong elements in the rows kept", out)
        print(f"PASS: {len(printed)} row(s) streamed and kept after SIGINT to the {to}; "
              f"JSON marked interrupted")


def free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def job_env(bench, launcher):
    devices = os.environ["VROCE_DEVICES"].split(",")[:2]
    host = devices[0].split("=", 1)[1]
    port = free_port(host)
    procs = []
    for rank, dev in enumerate(devices):
        env = dict(os.environ)
        for var in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                    "SLURM_PROCID", "SLURM_NTASKS", "MASTER_ADDR", "MASTER_PORT"):
            env.pop(var, None)
        env.update(VROCE_DEVICES=dev, NCCL_IB_HCA="=" + dev.split("=", 1)[0], MASTER_ADDR=host)
        if launcher == "torchrun":
            # torchrun's store holds MASTER_PORT; roce-bench's rank 0 listens on the next one.
            env.update(RANK=str(rank), WORLD_SIZE="2", MASTER_PORT=str(port - 1))
        elif launcher == "openmpi":
            env.update(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="2",
                       MASTER_PORT=str(port))
        else:
            env.update(SLURM_PROCID=str(rank), SLURM_NTASKS="2", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([bench, "-m", "pingpong", "-b", "8", "-e", "64", "-n", "20",
                                       "-w", "2", "--timeout", "60"],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    results = []
    for p in procs:
        try:
            results.append((p.returncode, *p.communicate(timeout=DEADLINE_S)))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail(f"the ranks did not finish within {DEADLINE_S} s")
    for rank, (_, out, err) in enumerate(results):
        code = procs[rank].returncode
        if code != 0:
            fail(f"rank {rank} exited with {code}", out, err)
    source = {"torchrun": "torchrun (RANK/WORLD_SIZE)",
              "openmpi": "Open MPI (OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE)",
              "slurm": "Slurm (SLURM_PROCID/SLURM_NTASKS)"}[launcher]
    out0 = results[0][1]
    if f"# rank and size from {source}" not in out0 or "Out of bounds values : 0 OK" not in out0:
        fail(f"rank 0 does not name {source} or did not verify its rows", out0)
    print(f"PASS: two ranks from {source} alone")


def main(argv):
    if len(argv) >= 4 and argv[0] == "interrupt" and argv[2] == "--to" and \
            argv[3] in ("group", "launcher"):
        interrupt(argv[1], argv[3], argv[4:])
    elif len(argv) == 3 and argv[0] == "job-env" and argv[2] in ("torchrun", "openmpi", "slurm"):
        job_env(argv[1], argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
