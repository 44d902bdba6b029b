"""The article's tensor-parallel hidden-state all-reduce through NCCL and the RoCE plugin.

Every rank fills a (batch x hidden) fp16 tensor with rank+1 (16 x 8192 = 256 KiB, one decode
step of a 70B-class model at batch 16), all-reduces it with SUM and checks that every element
equals n(n+1)/2. Then it times many all-reduces of that tensor with CUDA events after a warm-up
and prints p50/p90/p99 latencies (per rank and the slowest rank), and the lines of NCCL's own log
that say which network and transport it chose, failing when that is not the expected network.

Run with torchrun (see run_tp_allreduce.sh and run_tp_allreduce_vroce.sh):
  torchrun --nnodes 2 --nproc-per-node 8 ... tp_allreduce.py --iters 1000
"""

import argparse
import glob
import math
import os
import re
import socket
import sys

TRANSPORT_PATTERNS = (
    re.compile(r"Using network \S+"),
    re.compile(r"NET/Plugin\S*:? .*"),
    re.compile(r"NET/RoCE\b.*"),
    re.compile(r"via NET/\S+"),
)


def percentile(sorted_values, p):
    """Nearest-rank percentile (p in 0..100) of an ascending list."""
    if not sorted_values:
        raise ValueError("no samples")
    k = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[k - 1]


def transport_lines(text):
    """The lines of an NCCL_DEBUG=INFO log that name the network, plugin and channel transports,
    without repeats."""
    seen, out = set(), []
    for line in text.splitlines():
        if any(p.search(line) for p in TRANSPORT_PATTERNS):
            key = re.sub(r"^\S+:\d+:\d+ ", "", line.strip())
            if key not in seen:
                seen.add(key)
                out.append(line.strip())
    return out


def chosen_network(text):
    m = re.findall(r"Using network (\S+)", text)
    return m[-1] if m else None


def expected_value(world_size):
    return world_size * (world_size + 1) / 2


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--hidden", type=int, default=8192)
    p.add_argument("--iters", type=int, default=1000, help="timed all-reduces")
    p.add_argument("--warmup", type=int, default=50, help="untimed all-reduces first")
    p.add_argument("--sync-every", type=int, default=0, metavar="N",
                   help="wait for the GPU after every N all-reduces (0: queue them all). Over vroce's "
                        "emulated GPUDirect the host must not run far ahead of the GPU: see "
                        "vroce/src/gpu/driver_lock_hazard.h")
    p.add_argument("--expect-network", default=os.environ.get("ROCE_EXAMPLE_EXPECT_NETWORK", "RoCE"),
                   help="fail unless NCCL reports 'Using network <this>' (empty: do not check)")
    a = p.parse_args(argv)
    if a.batch < 1 or a.hidden < 1 or a.iters < 1 or a.warmup < 0 or a.sync_every < 0:
        p.error("--batch, --hidden and --iters must be positive, --warmup and --sync-every not negative")
    return a


def per_rank_vroce_device(local_rank):
    """For the one-host vroce variant: each local rank gets its own emulated NIC (its own
    127.0.0.x address), set before NCCL loads libibverbs."""
    base = os.environ.get("ROCE_EXAMPLE_VROCE_BASE")
    if base is None:
        return
    net, last = base.rsplit(".", 1)
    os.environ["VROCE_DEVICES"] = f"vroce{local_rank}={net}.{int(last) + local_rank}"


def rank_setup(log_name):
    """What a torchrun rank does before NCCL starts: reads RANK, WORLD_SIZE and LOCAL_RANK, gives
    itself its vroce device (per_rank_vroce_device), and has NCCL write its INIT and NET INFO lines
    to a per-process file (/tmp/<log_name>.<host>.<pid>.nccl.log unless NCCL_DEBUG_FILE is set),
    so that read_nccl_log() can say which network and transport NCCL chose.
    Returns (rank, world, local_rank, log_pattern)."""
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    per_rank_vroce_device(local_rank)
    os.environ.setdefault("NCCL_DEBUG", "INFO")
    os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET")
    log_pattern = os.environ.setdefault(
        "NCCL_DEBUG_FILE", f"/tmp/{log_name}.{socket.gethostname()}.{os.getpid()}.nccl.log")
    return rank, world, local_rank, log_pattern


def read_nccl_log(log_pattern):
    """This process's NCCL debug file(s) named by an NCCL_DEBUG_FILE pattern (%h any host, %p this
    pid), as one text; empty when there is none."""
    text = ""
    for path in sorted(glob.glob(log_pattern.replace("%h", "*").replace("%p", str(os.getpid())))):
        with open(path, errors="replace") as f:
            text += f.read()
    return text


def main(argv=None):
    args = parse_args(argv)
    rank, world, local_rank, log_pattern = rank_setup("tp_allreduce")

    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        print(f"rank {rank}: CUDA is not available: this example needs a GPU per rank", file=sys.stderr)
        return 3
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group(backend="nccl", device_id=device)

    x = torch.full((args.batch, args.hidden), float(rank + 1), dtype=torch.float16, device=device)
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    torch.cuda.synchronize()
    want = expected_value(world)
    wrong = int((x != want).sum().item())
    ok = torch.tensor([1 if wrong == 0 else 0], device=device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if wrong:
        print(f"rank {rank}: {wrong} of {x.numel()} elements differ from {want} after all-reduce", file=sys.stderr)

    # What NCCL chose: the log lines, from this rank's NCCL debug file.
    log_text = read_nccl_log(log_pattern)
    network = chosen_network(log_text)
    net_ok = not args.expect_network or network == args.expect_network
    if rank == 0 or not net_ok:
        print(f"rank {rank}: NCCL transport ({log_pattern}):")
        for line in transport_lines(log_text) or ["(no 'Using network' line: is NCCL_DEBUG=INFO reaching NCCL?)"]:
            print(f"  {line}")
    if not net_ok:
        print(f"rank {rank}: NCCL used network {network!r}, expected {args.expect_network!r}: "
              "see docs/troubleshooting.md (silent fallback)", file=sys.stderr)

    def bound_queue(done):
        if args.sync_every and done % args.sync_every == 0:
            torch.cuda.synchronize()

    for i in range(args.warmup):
        dist.all_reduce(x)
        bound_queue(i + 1)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(args.iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(args.iters)]
    for i in range(args.iters):
        starts[i].record()
        dist.all_reduce(x)
        ends[i].record()
        bound_queue(i + 1)
    torch.cuda.synchronize()
    lat_us = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends))
    mine = torch.tensor([percentile(lat_us, p) for p in (50, 90, 99)], dtype=torch.float64, device=device)
    slowest = mine.clone()
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    nbytes = x.numel() * x.element_size()
    if rank == 0:
        print(f"all-reduce of {args.batch}x{args.hidden} fp16 ({nbytes // 1024} KiB) over {world} ranks, "
              f"{args.iters} iterations after {args.warmup} warm-up; result check: "
              f"{'every element = ' + str(want) if ok.item() else 'WRONG'}")
        print(f"{'':14}{'p50 us':>10}{'p90 us':>10}{'p99 us':>10}")
        print(f"{'rank 0':14}" + "".join(f"{v:10.1f}" for v in mine.tolist()))
        print(f"{'slowest rank':14}" + "".join(f"{v:10.1f}" for v in slowest.tolist()))
        print(f"per token at 160 all-reduces (80 layers x 2): p50 {slowest[0].item() * 160 / 1000:.2f} ms")
    dist.destroy_process_group()
    return 0 if ok.item() and net_ok else 1


if __name__ == "__main__":
    sys.exit(main())
