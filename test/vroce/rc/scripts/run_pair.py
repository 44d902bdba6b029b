#!/usr/bin/env python3
"""Runs a vroce_rc_peer requester and responder joined by a socketpair, each optionally inside a
network namespace, and prints their outputs. Exit status 0 when both succeed.

usage: run_pair.py PEER SCENARIO
         [--req-netns NS] [--resp-netns NS] [--req-env K=V]... [--resp-env K=V]...
         [--req-device NAME] [--resp-device NAME] [--timeout SECONDS] -- [peer args...]
"""
import argparse
import os
import socket
import subprocess
import sys


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("peer")
    p.add_argument("scenario")
    p.add_argument("--req-netns")
    p.add_argument("--resp-netns")
    p.add_argument("--req-env", action="append", default=[])
    p.add_argument("--resp-env", action="append", default=[])
    p.add_argument("--req-device", default="vrA")
    p.add_argument("--resp-device", default="vrB")
    p.add_argument("--timeout", type=float, default=120)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    a = p.parse_args(argv[:split])
    extra = argv[split + 1:]

    req_sock, resp_sock = socket.socketpair()

    def start(role, device, netns, env_list, sock):
        env = dict(os.environ)
        for kv in env_list:
            k, v = kv.split("=", 1)
            env[k] = v
        cmd = [a.peer, "--role", role, "--device", device, "--scenario", a.scenario,
               "--sock", str(sock.fileno())] + extra
        if netns:
            cmd = ["ip", "netns", "exec", netns] + cmd
        return subprocess.Popen(cmd, pass_fds=[sock.fileno()], env=env,
                                stdout=subprocess.PIPE, text=True)

    resp = start("responder", a.resp_device, a.resp_netns, a.resp_env, resp_sock)
    req = start("requester", a.req_device, a.req_netns, a.req_env, req_sock)
    req_sock.close()
    resp_sock.close()
    ok = True
    for name, proc in (("requester", req), ("responder", resp)):
        try:
            out, _ = proc.communicate(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            print(f"{name}: killed after {a.timeout} s", file=sys.stderr)
            ok = False
        for line in out.splitlines():
            if not line.startswith("stats="):
                print(f"{name}: {line}")
        if proc.returncode != 0:
            print(f"{name}: exit status {proc.returncode}", file=sys.stderr)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
