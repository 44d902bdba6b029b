"""Every collective NCCL offers PyTorch, over the network NCCL chose, each result verified.

Run by torchrun with one GPU per rank (scripts/gpu-validate.sh does this with the RoCE plugin over
vroce and with NCCL's Socket transport). For each operation and size, every rank fills its input
with a pattern that depends on the rank and the element index, chosen so that the exact result is
representable in fp16 and bf16, runs the collective --iters times (after one untimed warm-up),
compares each result with the expected tensor on the GPU, and records the time of each run with
CUDA events. Rank 0 prints an nccl-tests-like table (size, count, type, op, time, algbw, busbw,
#wrong) and, with --json, writes the rows to a file. It then reports, from this rank's NCCL INFO
log, the network NCCL used and whether the channels went through GPUDirect RDMA (GDRDMA), and
fails when either differs from --expect-network / --expect-gdr: a silent fallback to another
transport or to host staging is a failure, not a slower pass.
"""

import argparse
from datetime import timedelta
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from tp_allreduce import chosen_network, rank_setup, read_nccl_log, transport_lines  # noqa: E402

# Operation name -> (bus bandwidth factor as nccl-tests defines it, with n ranks).
BUS_FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
DEFAULT_OPS = "all_reduce:float16,all_reduce:bfloat16,all_reduce:float32,all_gather:float32," \
              "reduce_scatter:float32,broadcast:float32,send_recv:float32"
# Small integers: sums over up to 8 ranks stay below 256, exact in bf16's 8-bit significand.
PATTERN_PERIOD = 7


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)i?B?", text.strip(), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 8, 256K, 64M, 1G)")
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]


def sizes(lo, hi, factor):
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= factor
    if out[-1] != hi:
        out.append(hi)  # the largest size is always measured, as asked
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--min-bytes", type=parse_size, default=8)
    p.add_argument("--max-bytes", type=parse_size, default=256 << 20)
    p.add_argument("--factor", type=int, default=4, help="size step, as nccl-tests' -f")
    p.add_argument("--iters", type=int, default=5, help="timed, verified runs per size")
    p.add_argument("--ops", default=DEFAULT_OPS,
                   help="comma-separated op:dtype list (ops: " + ", ".join(BUS_FACTORS) + ")")
    p.add_argument("--expect-network", default="RoCE",
                   help="fail unless NCCL logs 'Using network <this>' (empty: do not check)")
    p.add_argument("--expect-gdr", choices=("yes", "no", "any"), default="any",
                   help="yes: every network channel must be GPUDirect (GDRDMA); no: none may be")
    p.add_argument("--json", help="rank 0 writes the rows and the verdict here")
    p.add_argument("--timeout", type=float, default=180,
                   help="seconds a collective may take before NCCL's watchdog fails the run")
    a = p.parse_args(argv)
    if a.min_bytes < 1 or a.max_bytes < a.min_bytes or a.factor < 2 or a.iters < 1:
        p.error("need 1 <= --min-bytes <= --max-bytes, --factor >= 2, --iters >= 1")
    for item in a.ops.split(","):
        op = item.split(":")[0]
        if op not in BUS_FACTORS:
            p.error(f"unknown op {op!r}")
    return a


def pattern(torch, count, rank, dtype, device):
    """((i mod 7) + 1) * (rank + 1): distinct per rank and position, exact in every dtype."""
    i = torch.arange(count, device=device, dtype=torch.int64)
    return ((i % PATTERN_PERIOD + 1) * (rank + 1)).to(dtype)


class Case:
    """One op at one size: the buffers, the call, and the expected result."""

    def __init__(self, torch, dist, op, dtype, nbytes, rank, world, device):
        esize = torch.empty((), dtype=dtype).element_size()
        # nccl-tests' convention: the size is the larger buffer; counts divide evenly by world.
        count = max(world, nbytes // esize // world * world)
        self.op, self.count, self.bytes = op, count, count * esize
        self.dist, self.world = dist, world
        tri = world * (world + 1) // 2
        if op == "all_reduce":
            self.src = pattern(torch, count, rank, dtype, device)
            self.out = torch.empty_like(self.src)
            self.want = pattern(torch, count, 0, dtype, device) * tri
            self.call = lambda: (self.out.copy_(self.src), dist.all_reduce(self.out))
        elif op == "all_gather":
            chunk = count // world
            self.src = pattern(torch, chunk, rank, dtype, device)
            self.out = torch.empty(count, dtype=dtype, device=device)
            self.want = torch.cat([pattern(torch, chunk, r, dtype, device) for r in range(world)])
            self.call = lambda: dist.all_gather_into_tensor(self.out, self.src)
        elif op == "reduce_scatter":
            chunk = count // world
            self.src = pattern(torch, count, rank, dtype, device)
            self.out = torch.empty(chunk, dtype=dtype, device=device)
            self.want = pattern(torch, count, 0, dtype, device)[rank * chunk:(rank + 1) * chunk] * tri
            self.call = lambda: dist.reduce_scatter_tensor(self.out, self.src)
        elif op == "broadcast":
            self.src = pattern(torch, count, 0, dtype, device)
            self.out = torch.empty_like(self.src)
            self.want = self.src.clone()
            mine = self.src if rank == 0 else torch.zeros_like(self.src)
            self.call = lambda: (self.out.copy_(mine), dist.broadcast(self.out, src=0))
        elif op == "send_recv":
            # A ring: every rank sends to the next and receives from the previous, at once.
            peer_to, peer_from = (rank + 1) % world, (rank - 1) % world
            self.src = pattern(torch, count, rank, dtype, device)
            self.out = torch.empty_like(self.src)
            self.want = pattern(torch, count, peer_from, dtype, device)
            ops = [dist.P2POp(dist.isend, self.src, peer_to), dist.P2POp(dist.irecv, self.out, peer_from)]
            self.call = lambda: [w.wait() for w in dist.batch_isend_irecv(ops)]
        else:
            raise ValueError(op)

    def wrong(self):
        return int((self.out != self.want).sum().item())


def main(argv=None):
    args = parse_args(argv)
    rank, world, gpu, log_pattern = rank_setup("gpu-validate")

    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        print(f"rank {rank}: CUDA is not available: this check needs a GPU per rank", file=sys.stderr)
        return 3
    torch.cuda.set_device(gpu)
    device = torch.device("cuda", gpu)
    dist.init_process_group(backend="nccl", device_id=device, timeout=timedelta(seconds=args.timeout))

    rows, total_wrong = [], 0
    if rank == 0:
        print(f"{'size(B)':>12}{'count':>12}{'type':>10}{'op':>16}{'time(us)':>12}{'algbw':>9}"
              f"{'busbw':>9}{'#wrong':>8}", flush=True)
    for item in args.ops.split(","):
        op, _, dtype_name = item.partition(":")
        dtype = getattr(torch, dtype_name or "float32")
        for nbytes in sizes(args.min_bytes, args.max_bytes, args.factor):
            case = Case(torch, dist, op, dtype, nbytes, rank, world, device)
            case.call()  # warm-up: connections and registrations happen here
            times, wrong = [], case.wrong()
            for _ in range(args.iters):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                case.out.zero_()
                start.record()
                case.call()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1000.0)
                wrong += case.wrong()
            stats = torch.tensor([sum(times) / len(times), wrong], dtype=torch.float64, device=device)
            dist.all_reduce(stats[0:1], op=dist.ReduceOp.MAX)
            dist.all_reduce(stats[1:2], op=dist.ReduceOp.SUM)
            us, wrong_all = stats[0].item(), int(stats[1].item())
            total_wrong += wrong_all
            algbw = case.bytes / us / 1e3
            busbw = algbw * BUS_FACTORS[op](world)
            row = dict(op=op, dtype=dtype_name, bytes=case.bytes, count=case.count, time_us=round(us, 2),
                       algbw_gbs=round(algbw, 3), busbw_gbs=round(busbw, 3), wrong=wrong_all)
            rows.append(row)
            if rank == 0:
                print(f"{case.bytes:>12}{case.count:>12}{dtype_name:>10}{op:>16}{us:>12.1f}{algbw:>9.2f}"
                      f"{busbw:>9.2f}{wrong_all:>8}", flush=True)
            del case

    log_text = read_nccl_log(log_pattern)
    network = chosen_network(log_text)
    channels = [l for l in transport_lines(log_text) if re.search(r"via NET/", l)]
    gdr_channels = [l for l in channels if "GDRDMA" in l]
    problems = []
    if total_wrong:
        problems.append(f"{total_wrong} wrong elements")
    if args.expect_network and network != args.expect_network:
        problems.append(f"NCCL used network {network!r}, expected {args.expect_network!r}")
    if not channels and args.expect_network:
        problems.append("no 'via NET/' channel in NCCL's log: set NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET")
    if args.expect_gdr == "yes" and len(gdr_channels) != len(channels):
        problems.append(f"{len(channels) - len(gdr_channels)} of {len(channels)} network channels without GDRDMA")
    if args.expect_gdr == "no" and gdr_channels:
        problems.append(f"{len(gdr_channels)} network channels use GDRDMA where host staging was asked for")
    verdict = torch.tensor([1 if problems else 0], device=device)
    dist.all_reduce(verdict, op=dist.ReduceOp.MAX)
    if rank == 0 or problems:
        print(f"rank {rank}: network {network}; {len(channels)} network channel lines, "
              f"{len(gdr_channels)} with GDRDMA (log {log_pattern})")
        for line in transport_lines(log_text)[:12]:
            print(f"  {line}")
        plugin_lines = [l.strip() for l in log_text.splitlines() if re.search(r"GPUDirect|GDR mode|gdr", l)]
        for line in plugin_lines[:6]:
            print(f"  {line}")
        for p in problems:
            print(f"rank {rank}: FAIL: {p}", file=sys.stderr)
    if rank == 0:
        print(f"verdict: {'FAIL' if verdict.item() else 'PASS'}: {len(rows)} cases, {total_wrong} wrong elements")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(world=world, nccl=".".join(map(str, torch.cuda.nccl.version())),
                               network=network, gdr_channels=len(gdr_channels), channels=len(channels),
                               rows=rows, passed=not verdict.item()), f, indent=1)
    dist.destroy_process_group()
    return 1 if verdict.item() else 0


if __name__ == "__main__":
    sys.exit(main())
