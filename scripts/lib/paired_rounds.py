"""Paired rounds: how the side-by-side benchmarks (scripts/bench-vs-netib over roce-bench,
tools/gpu-validate/side_by_side.py inside NCCL) turn rounds of runs into a ratio, an interval and a
verdict. Each round runs every contender once, back to back, so each round gives one paired ratio
per cell; the median of those ratios is the figure, a bootstrap interval of that median says how
far the rounds let it move, and a verdict is given only where the interval lies wholly on one side
of 1.00 (and, with an A/A control, wholly beyond the control's interval)."""

import itertools
import random
import statistics


def paired_interval(ours, theirs, level=0.90, resamples=2000, seed=16):
    """The median of the per-round ratios ours[i] / theirs[i] and a bootstrap interval of it at
    `level` (percentile method; a fixed seed, so one set of rounds always gives one interval)."""
    ratios = [o / t for o, t in zip(ours, theirs) if t > 0]
    if not ratios:
        return None, None, None
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    lo = medians[int(tail * (resamples - 1))]
    hi = medians[int((1.0 - tail) * (resamples - 1))]
    return statistics.median(ratios), lo, hi


def verdict(lo, hi, control=None):
    """'slower' or 'faster' where the interval lies wholly on one side of 1.00 (and, given the
    control's interval, wholly beyond it on that side too), else 'tie'."""
    if lo is None:
        return "-"
    c_lo, c_hi = control if control and control[0] is not None else (1.0, 1.0)
    if lo > max(1.0, c_hi):
        return "slower"
    if hi < min(1.0, c_lo):
        return "faster"
    return "tie"


def round_order(runs, r):
    """The order of round r's runs: two alternate; three go through all six orders in turn; more
    rotate (round r starts with run r mod n), so every run takes every position in turn."""
    if len(runs) == 2:
        return runs if r % 2 == 0 else runs[::-1]
    if len(runs) == 3:
        return list(itertools.permutations(runs))[r % 6]
    k = r % len(runs)
    return runs[k:] + runs[:k]
