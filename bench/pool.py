#!/usr/bin/env python3
"""pool.py [--twin v1|b|d] [--limit L] [--seed N] [--rounds R] CSV...: format 2's cost over compare.sh runs.

One compare.sh run gives format 2's cost per row as a ratio of two
medians of a few rounds (the "v2 cost" columns). On the shared 2-core
machine of this project a row's single measurement moves by 10-30%
(LS, a 0.5 s row, most), so that ratio moves by about 0.08 from run to
run of one build, and a cost of 1.03 passes or fails a limit of 1.05 by
chance. This pools the runs: every round of every run given pairs the
default vault's measurement with its format-1 twin's (same round, same
transport), and each row reports

  - the median of those paired ratios, oriented as a cost (seconds:
    v2 / v1; MiB/s: v1 / v2; > 1 means format 2 is slower);
  - a 90% percentile-bootstrap interval of that median (2000 resamples,
    seeded, so the output is reproducible);
  - in how many of the runs the row's own ratio of medians (what the
    run's table says) was within the limit.

Only runs with both twins of a transport count for it. The rows are
compare_report.py's speed rows.

--twin b pairs the default vault with the encryptfs-b-* column instead
(--twin d: the daemonized one): with ENCRYPTFS_B set to the same build,
an A/A control, whose costs are 1 but for the machine's noise.

Last, the chance that one run passes: the probability that a run of R
rounds (--rounds, default 5) has every row's ratio of medians within
the limit, estimated by drawing R rounds for each column from the
pooled measurements (2000 draws, seeded): once with the pooled costs as
they are, once with the default column scaled so that every row's
pooled cost is 1.00 (what a format 2 that cost nothing would pass).
"""

import argparse
import csv
import random
import statistics
from collections import defaultdict

from compare_report import ROWS

TRANSPORTS = ("classic", "uring")


def load(path):
    """column, metric -> round -> value."""
    v = defaultdict(dict)
    with open(path) as f:
        for row in csv.DictReader(f):
            v[(row["column"], row["metric"])][row["round"]] = float(row["value"])
    return v


def cost(a, b, kind):
    """Format 2's cost of measurement a against its twin's b."""
    return b / a if kind == "thr" else a / b


def chance(samples, limit, rounds, rng, scale, draws=2000):
    """Probability that one run of rounds rounds has every row within
    limit: samples is a list of (kind, default values, twin values, write
    rows' rounds); scale: the default column scaled to a pooled cost of 1."""
    passed = 0
    rows = []
    for kind, a, b, n in samples:
        if scale:
            c = cost(statistics.median(a), statistics.median(b), kind)
            a = [x * c for x in a] if kind == "thr" else [x / c for x in a]
        rows.append((kind, a, b, n))
    for _ in range(draws):
        ok = True
        for kind, a, b, n in rows:
            k = max(1, min(rounds, n))
            if cost(statistics.median(rng.choices(a, k=k)), statistics.median(rng.choices(b, k=k)), kind) > limit:
                ok = False
                break
        passed += ok
    return passed / draws


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--twin", choices=("v1", "b", "d"), default="v1")
    ap.add_argument("--limit", type=float, default=1.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("csv", nargs="+")
    args = ap.parse_args()
    runs = [load(p) for p in args.csv]
    rng = random.Random(args.seed)
    samples = []
    print("| row | transport | runs | pairs | cost, median of pairs | 90%% interval | runs within %.2f |" % args.limit)
    print("|---|---|---|---|---|---|---|")
    for metric, label, kind in ROWS:
        if kind not in ("thr", "time") or metric.startswith("cpu_"):
            continue
        for tr in TRANSPORTS:
            pairs, within, n = [], 0, 0
            every_a, every_b = [], []  # all rounds of each column, for chance
            for v in runs:
                a, b = v.get(("encryptfs-" + tr, metric)), v.get(("encryptfs-%s-%s" % (args.twin, tr), metric))
                if not a or not b:
                    continue
                every_a += a.values()
                every_b += b.values()
                got = [cost(a[r], b[r], kind) for r in a if r in b and a[r] > 0 and b[r] > 0]
                if not got:
                    continue
                n += 1
                pairs += got
                if cost(statistics.median(a.values()), statistics.median(b.values()), kind) <= args.limit:
                    within += 1
            if not pairs:
                continue
            meds = sorted(statistics.median(rng.choices(pairs, k=len(pairs))) for _ in range(2000))
            print("| %s | %s | %d | %d | %.3f | %.3f..%.3f | %d/%d |" % (
                label, tr, n, len(pairs), statistics.median(pairs), meds[100], meds[1899], within, n))
            # the write rows run in some rounds only: a run has about
            # half its rounds of each
            per_run = len(pairs) / n
            samples.append((kind, every_a, every_b, round(per_run * args.rounds / 5) if per_run < 5 else args.rounds))
    if not samples:
        raise SystemExit("pool.py: no round has both encryptfs and encryptfs-%s columns in these runs" % args.twin)
    print()
    print("Chance that one run of %d rounds has all %d rows within %.2f: %.3f with these costs, %.3f if every cost were 1.00." % (
        args.rounds, len(samples), args.limit, chance(samples, args.limit, args.rounds, rng, False),
        chance(samples, args.limit, args.rounds, rng, True)))


if __name__ == "__main__":
    main()
