"""The article's tensor-parallel hidden-state all-reduce through NCCL and the RoCE plugin.

Every rank fills a (batch x hidden) tensor with rank+1 (fp16 16 x 8192 = 256 KiB: one all-reduce
of Llama 3 70B's decode step at batch 16), all-reduces it with SUM and checks that every element
equals n(n+1)/2. Then it times decode steps: each is the model's 2 all-reduces per layer (160 for
70B), each timed with CUDA events after a warm-up. It prints p50/p90/p99 per all-reduce (per
rank and the slowest rank), the lines of NCCL's own log that say which network and transport it
chose (failing when that is not the expected network), and the per-token line that
`roce-bench --mode tp` prints too: communication per token beside the ring floor and the budget.

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


# The same presets as roce-bench --mode tp (tools/roce-bench/src/tp_model.cpp; a test keeps the
# two in step): name -> (display name, layers, hidden size).
MODELS = {
    "llama3-8b": ("Llama 3 8B", 32, 4096),
    "llama3-70b": ("Llama 3 70B", 80, 8192),
    "llama3-405b": ("Llama 3 405B", 126, 16384),
    "mixtral-8x7b": ("Mixtral 8x7B", 32, 4096),
    "mixtral-8x22b": ("Mixtral 8x22B", 56, 6144),
    "qwen2-72b": ("Qwen2 72B", 80, 8192),
}
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}


def ring_allreduce_floor_us(nbytes, ranks, link_gbps, hop_latency_us):
    """The ring all-reduce's floor as roce-bench counts it (tp_model.h): 2(n-1) steps, each
    moving 1/n of the data over the link and paying one hop latency."""
    steps = 2.0 * (ranks - 1)
    return steps / ranks * nbytes * 8.0 / (link_gbps * 1e3) + steps * hop_latency_us


def human_bytes(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n // size} {unit}" if n % size == 0 else f"{n / size:.2f} {unit}"
    return f"{n} B"


def model_display(preset, layers, hidden):
    m = MODELS.get(preset)
    if m and m[1] == layers and m[2] == hidden:
        return m[0]
    return f"custom ({layers} layers, hidden {hidden})"


def per_token_line(model, ranks, batch, dtype, layers, hidden, token_p50_us, token_p99_us,
                   allreduce_p50_us, floor_token_us, budget_ms, compute_ms=None):
    """The line roce-bench --mode tp ends with (tp_model.h per_token_line), character for
    character, so a torchrun job and roce-bench report the same thing."""
    token_ms = token_p50_us / 1e3
    ratio = token_p50_us / floor_token_us if floor_token_us > 0 else 0.0
    line = (f"per token: {model}, TP={ranks}, batch {batch}, {dtype}: {2 * layers} all-reduces of "
            f"{human_bytes(batch * hidden * DTYPE_BYTES[dtype])}; communication p50 {token_ms:.2f} ms, "
            f"p99 {token_p99_us / 1e3:.2f} ms ({allreduce_p50_us:.1f} us per all-reduce); floor "
            f"{floor_token_us / 1e3:.2f} ms ({ratio:.1f}x); {100.0 * token_ms / budget_ms:.0f}% of a "
            f"{budget_ms:g} ms budget")
    if compute_ms is not None:
        total = compute_ms + token_ms
        line += f"; with {compute_ms:g} ms of compute: {total:.2f} ms per token, "
        line += (f"over the budget by {total - budget_ms:.2f} ms" if total > budget_ms
                 else f"within the budget, {budget_ms - total:.2f} ms to spare")
    return line


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


def fill_value(rank, dtype):
    """What each rank puts in every element: rank+1, so the sum n(n+1)/2 is exact in fp16 and
    fp32 for any TP size used; bf16 holds only 8 significant bits, so there every rank puts 1."""
    return 1.0 if dtype == "bf16" else float(rank + 1)


def expected_value(world_size, dtype="fp16"):
    return float(world_size) if dtype == "bf16" else world_size * (world_size + 1) / 2


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="llama3-70b", choices=sorted(MODELS),
                   help="preset shape, as roce-bench --mode tp (default llama3-70b)")
    p.add_argument("--layers", type=int, help="override the preset's layer count")
    p.add_argument("--hidden", type=int, help="override the preset's hidden size")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--dtype", default="fp16", choices=sorted(DTYPE_BYTES))
    p.add_argument("--steps", type=int, help="timed decode steps (tokens) of 2 x layers all-reduces "
                                             "(default: enough for --iters all-reduces)")
    p.add_argument("--iters", type=int, default=1000,
                   help="timed all-reduces, rounded up to whole decode steps (ignored with --steps)")
    p.add_argument("--warmup", type=int, default=50, help="untimed all-reduces first")
    p.add_argument("--budget-ms", type=float, default=15.0, help="per-token latency budget")
    p.add_argument("--compute-ms", type=float, help="the model's compute per token")
    p.add_argument("--link-gbps", type=float, default=400.0, help="link speed for the floor")
    p.add_argument("--nic-latency-us", type=float, default=1.0, help="per-hop latency for the floor")
    p.add_argument("--sync-every", type=int, default=0, metavar="N",
                   help="wait for the GPU after every N all-reduces (0: queue them all). Over vroce's "
                        "emulated GPUDirect the host must not run far ahead of the GPU: see "
                        "vroce/src/gpu/driver_lock_hazard.h")
    p.add_argument("--expect-network", default=os.environ.get("ROCE_EXAMPLE_EXPECT_NETWORK", "RoCE"),
                   help="fail unless NCCL reports 'Using network <this>' (empty: do not check)")
    a = p.parse_args(argv)
    _, preset_layers, preset_hidden = MODELS[a.model]
    a.layers = preset_layers if a.layers is None else a.layers
    a.hidden = preset_hidden if a.hidden is None else a.hidden
    if min(a.batch, a.hidden, a.layers, a.iters) < 1 or (a.steps is not None and a.steps < 1):
        p.error("--batch, --hidden, --layers, --iters and --steps must be positive")
    if a.warmup < 0 or a.sync_every < 0:
        p.error("--warmup and --sync-every must not be negative")
    if a.budget_ms <= 0 or a.link_gbps <= 0 or a.nic_latency_us < 0 or (a.compute_ms or 0) < 0:
        p.error("--budget-ms and --link-gbps must be positive, --nic-latency-us and --compute-ms not negative")
    if a.steps is None:
        a.steps = -(-a.iters // (2 * a.layers))
    return a


def per_rank_vroce_device(local_rank):
    """For the one-host vroce variant: each local rank gets its own emulated NIC (its own
    127.0.0.x address), set before NCCL loads libibverbs."""
    base = os.environ.get("ROCE_EXAMPLE_VROCE_BASE")
    if base is None:
        return
    net, last = base.rsplit(".", 1)
    os.environ["VROCE_DEVICES"] = f"vroce{local_rank}={net}.{int(last) + local_rank}"


def shared_gpu_identity(local_rank):
    """ROCE_EXAMPLE_SHARE_GPU=1: every rank runs on GPU 0, as on a machine with one GPU. NCCL
    refuses two ranks of one host on one GPU ("Duplicate GPU detected"), so each rank names its
    own host (NCCL_HOSTID): NCCL then connects them over the network, which is the plugin, and
    uses neither NVLink nor shared memory between them. Returns the GPU this rank uses."""
    if os.environ.get("ROCE_EXAMPLE_SHARE_GPU", "0") in ("", "0"):
        return local_rank
    os.environ["NCCL_HOSTID"] = f"{socket.gethostname()}-rank{local_rank}"
    return 0


def rank_setup(log_name):
    """What a torchrun rank does before NCCL starts: reads RANK, WORLD_SIZE and LOCAL_RANK, gives
    itself its vroce device (per_rank_vroce_device) and its GPU (shared_gpu_identity), and has NCCL
    write its INIT and NET INFO lines
    to a per-process file (/tmp/<log_name>.<host>.<pid>.nccl.log unless NCCL_DEBUG_FILE is set),
    so that read_nccl_log() can say which network and transport NCCL chose.
    Returns (rank, world, gpu, log_pattern)."""
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    per_rank_vroce_device(local_rank)
    gpu = shared_gpu_identity(local_rank)
    os.environ.setdefault("NCCL_DEBUG", "INFO")
    os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET")
    log_pattern = os.environ.setdefault(
        "NCCL_DEBUG_FILE", f"/tmp/{log_name}.{socket.gethostname()}.{os.getpid()}.nccl.log")
    return rank, world, gpu, log_pattern


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
    rank, world, gpu, log_pattern = rank_setup("tp_allreduce")

    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        print(f"rank {rank}: CUDA is not available: this example needs a GPU per rank", file=sys.stderr)
        return 3
    torch.cuda.set_device(gpu)
    device = torch.device("cuda", gpu)
    dist.init_process_group(backend="nccl", device_id=device)

    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    x = torch.full((args.batch, args.hidden), fill_value(rank, args.dtype), dtype=torch_dtype, device=device)
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    torch.cuda.synchronize()
    want = expected_value(world, args.dtype)
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
    per_token = 2 * args.layers
    iters = args.steps * per_token
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        starts[i].record()
        dist.all_reduce(x)
        ends[i].record()
        bound_queue(i + 1)
    torch.cuda.synchronize()
    lat_us = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends))
    # A token's communication: from its first all-reduce's start to its last one's end.
    token_us = [starts[t * per_token].elapsed_time(ends[(t + 1) * per_token - 1]) * 1000.0
                for t in range(args.steps)]
    mine = torch.tensor([percentile(lat_us, p) for p in (50, 90, 99)], dtype=torch.float64, device=device)
    slowest = mine.clone()
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    tokens = torch.tensor(token_us, dtype=torch.float64, device=device)
    dist.all_reduce(tokens, op=dist.ReduceOp.MAX)  # token by token, the slowest rank
    nbytes = x.numel() * x.element_size()
    if rank == 0:
        print(f"all-reduce of {args.batch}x{args.hidden} {args.dtype} ({human_bytes(nbytes)}) over {world} ranks, "
              f"{iters} iterations ({args.steps} decode steps of {per_token}) after {args.warmup} warm-up; "
              f"result check: {'every element = ' + str(want) if ok.item() else 'WRONG'}")
        print(f"{'':14}{'p50 us':>10}{'p90 us':>10}{'p99 us':>10}")
        print(f"{'rank 0':14}" + "".join(f"{v:10.1f}" for v in mine.tolist()))
        print(f"{'slowest rank':14}" + "".join(f"{v:10.1f}" for v in slowest.tolist()))
        sorted_tokens = sorted(tokens.tolist())
        floor_us = ring_allreduce_floor_us(nbytes, world, args.link_gbps, args.nic_latency_us)
        print(f"floor: ring over {world} ranks at {args.link_gbps:g} Gb/s, {args.nic_latency_us:g} us per hop: "
              f"{floor_us:.2f} us per all-reduce")
        print(per_token_line(model_display(args.model, args.layers, args.hidden), world, args.batch, args.dtype,
                             args.layers, args.hidden, percentile(sorted_tokens, 50), percentile(sorted_tokens, 99),
                             slowest[0].item(), floor_us * per_token, args.budget_ms, args.compute_ms))
    dist.destroy_process_group()
    return 0 if ok.item() and net_ok else 1


if __name__ == "__main__":
    sys.exit(main())
