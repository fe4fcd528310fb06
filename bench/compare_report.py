#!/usr/bin/env python3
"""compare_report.py CSV META DAT: bench/compare.sh's report.

Reads the raw per-round CSV (round,column,metric,value) and the run's
metadata (key=value lines), prints the markdown tables to stdout and writes
the chart's data (every speed row's encryptfs / best peer ratio, as a
speed-up: > 1 means encryptfs is faster) to DAT for compare_chart.gp.

Cells are "median (min..max)" over the rounds. The ratio columns follow
the issue's convention: ours / best peer of the medians, so < 1 is better
for times and sizes and > 1 is better for throughput; "slower" (or
"larger") marks the rows where encryptfs loses.
"""

import csv
import statistics
import sys
from collections import defaultdict

PEERS = ["gocryptfs", "securefs", "encfs", "cryfs"]
OURS = ["encryptfs-classic", "encryptfs-uring"]

# (metric, label, kind): kind thr = MiB/s, higher is better; time = s and
# size = bytes or MiB, lower is better; check = must be 0, no ratio.
ROWS = [
    ("write_MiBps", "WRITE dd bs=128k conv=fsync, MiB/s (streaming rows first: odd rounds)", "thr"),
    ("write_late_MiBps", "WRITE after the small-file rows, MiB/s (even rounds)", "thr"),
    ("cpu_write_s", "the daemon's CPU s during WRITE (odd rounds)", "time"),
    ("cpu_write_late_s", "the daemon's CPU s during WRITE after the small-file rows (even rounds)", "time"),
    ("read_MiBps", "READ, the file's page cache dropped, MiB/s", "thr"),
    ("read_cold_MiBps", "READ after drop_caches, MiB/s", "thr"),
    ("stream_write_MiBps", "stream_write 4 KiB writes (dd bs=4k), MiB/s", "thr"),
    ("urandom_MiBps", "dd from /dev/urandom bs=4k, MiB/s", "thr"),
    ("untar_s", "UNTAR s", "time"),
    ("md5_s", "MD5 s", "time"),
    ("ls_s", "LS -lR s", "time"),
    ("rsync_s", "RSYNC -an s", "time"),
    ("du_s", "DU s", "time"),
    ("rm_s", "RM -rf s", "time"),
    ("md5_bad", "check: md5 mismatches (must be 0)", "check"),
    ("rsync_changed", "check: rsync changed entries (must be 0)", "check"),
    ("du_MiB", "ciphertext du -sm of the tree, MiB", "size"),
    ("du_KiB", "ciphertext du -sk of the tree, KiB", "size"),
    ("fresh_KiB", "of which freshness files (encryptfs.manifests.*, encryptfs.epoch.*), KiB", "size"),
    ("size_0_B", "ciphertext of an empty file, bytes", "size"),
    ("size_1_B", "ciphertext of a 1-byte file, bytes", "size"),
    ("size_1000000_B", "ciphertext of a 1,000,000-byte file, bytes", "size"),
]
FIO_ROWS = [
    ("fio_%s-%s_MiBps" % (rw, bs), "fio %s %s" % (rw, bs.replace("k", " KiB").replace("1m", "1 MiB")), "thr")
    for bs in ("4k", "128k", "1m")
    for rw in ("write", "read", "randwrite", "randread")
]
# The daemon's memory: RSS once mounted, then the peak during each row.
MEM_ROWS = [("rss_idle_MiB", "RSS once mounted, MiB", "mem")] + [
    ("rss_%s_MiB" % m, "peak RSS during %s, MiB" % label, "mem")
    for m, label in (("write", "WRITE"), ("read", "READ and READ cold"), ("stream", "stream and urandom"),
                     ("untar", "UNTAR"), ("md5", "MD5"), ("ls", "LS -lR"), ("rsync", "RSYNC"),
                     ("du", "DU"), ("rm", "RM"), ("fio", "fio"))
]
SHORT = {
    "write_MiBps": "WRITE", "write_late_MiBps": "WRITE late", "read_MiBps": "READ", "read_cold_MiBps": "READ cold",
    "stream_write_MiBps": "stream 4k", "urandom_MiBps": "urandom 4k",
    "untar_s": "UNTAR", "md5_s": "MD5", "ls_s": "LS -lR", "rsync_s": "RSYNC",
    "du_s": "DU", "rm_s": "RM",
}


def fmt(v, kind):
    if v is None:
        return "-"
    if kind == "time":
        return "%.2f" % v
    if kind == "mem":
        return "%.0f" % v if v >= 10 else "%.1f" % v
    if kind in ("check", "size") or abs(v) >= 100:
        return "%.0f" % v
    return "%.1f" % v


def pct(p):
    return "%.1f" % p if p < 10 else "%.0f" % p


def main():
    csv_path, meta_path, dat_path = sys.argv[1:4]
    values = defaultdict(list)  # (column, metric) -> [value, ...]
    by_round = {}  # (column, metric, round) -> value
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            v = float(row["value"])
            values[(row["column"], row["metric"])].append(v)
            by_round[(row["column"], row["metric"], row["round"])] = v
    meta = defaultdict(list)
    with open(meta_path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            meta[k].append(v)
    columns = meta["columns"][0].split()
    peers = [c for c in columns if c in PEERS]
    # Skipped columns stay in the table, every cell saying so.
    skipped = [x.split(":", 1)[0] for x in meta.get("skipped", [])]
    shown = columns + [c for c in skipped if c not in columns]
    ours = [c for c in shown if c in OURS]
    # Pairs of encryptfs columns, each shown as a ratio of medians: the
    # format-1 twin of each of ours (the cost of format 2), the same
    # daemonized (-d-) over -f, and ours over another build (-b-).
    pairs = []
    for kind_, label in (("v1", "v2 cost"), ("d", "daemonized / -f"), ("b", "A/B")):
        for c in ours:
            other = c.replace("encryptfs-", "encryptfs-%s-" % kind_)
            if other not in columns:
                continue
            pairs.append((other, c, label) if kind_ == "d" else (c, other, label))

    def med(col, metric):
        vs = values.get((col, metric))
        return statistics.median(vs) if vs else None

    def cell(col, metric, kind):
        vs = values.get((col, metric))
        if not vs:
            return "-"
        if len(vs) == 1:
            return fmt(vs[0], kind)
        return "%s (%s..%s)" % (fmt(statistics.median(vs), kind), fmt(min(vs), kind), fmt(max(vs), kind))

    def best_peer(metric, kind):
        cands = [(med(p, metric), p) for p in peers if med(p, metric) is not None]
        if not cands:
            return None, None
        v, p = (max if kind == "thr" else min)(cands)
        return v, p

    def ratio(col, metric, kind):
        """(text, speed-up for the chart or None)."""
        ours_v = med(col, metric)
        best, who = best_peer(metric, kind)
        if ours_v is None or best is None or best == 0 or kind == "check":
            return "-", None
        r = ours_v / best
        worse = r < 1 if kind == "thr" else r > 1
        mark = (" slower" if kind not in ("size", "mem") else " larger") if worse else ""
        speed = r if kind == "thr" else (1 / r if r else None)
        return "%.2f%s (%s)" % (r, mark, who), speed

    out = []
    out.append("Run of %s; measured: encryptfs at %s." % (meta["date"][0], meta["commit"][0]))
    out.append("")
    out.append("- Machine: %s." % meta["machine"][0])
    out.append("- Workload: %s; %s." % (meta["workload"][0], meta["sizes"][0]))
    out.append("- %s round(s), interleaved (the column order rotates each round and runs backwards in even rounds; twins run side by side); cells are the median (min..max) over the rounds." % meta["rounds"][0])
    out.append("- Versions: " + "; ".join("%s %s" % (c, meta["version." + c][0]) for c in columns if meta.get("version." + c)) + ".")
    for s in meta.get("skipped", []):
        out.append("- **Skipped** %s" % s)
    for s in meta.get("failed", []):
        out.append("- **FAILED** %s" % s)
    out.append("- Ratio columns: encryptfs / the best peer (%s) of the medians, the peer named; for MiB/s rows > 1 is better, for seconds and sizes < 1 is better; \"slower\" marks a row where encryptfs loses. tmpfs and the no-crypto loopback are references, not peers." % (", ".join(peers) or "none ran"))
    labels = {p[2] for p in pairs}
    if "v2 cost" in labels:
        out.append("- v2 cost columns: the default vault (format 2: location binding, file roots, freshness) / a format-1 vault (init --format 1) on the same transport, medians of the same run.")
    if "daemonized / -f" in labels:
        out.append("- daemonized / -f columns: the default vault mounted without -f (the daemon forks off, as a user or fstab runs it) / with -f (as systemd runs it).")
    if "A/B" in labels:
        out.append("- A/B columns: this build / the encryptfs-b build (%s) on the same transport, medians of the same run." % (meta.get("version.encryptfs-b-classic") or meta.get("version.encryptfs-b-uring") or ["?"])[0])
    out.append("")

    def table(rows, fio=False):
        head = ["row"] + shown + ["%s / best peer" % c for c in ours] + ["%s / %s (%s)" % p for p in pairs]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        chart = []
        for metric, label, kind in rows:
            if not any(values.get((c, metric)) for c in columns):
                continue
            cells = [label]
            for c in shown:
                if c in skipped:
                    cells.append("skipped")
                elif fio and c != "tmpfs" and "tmpfs" in columns:
                    cells.append(fio_cell(c, metric))
                else:
                    cells.append(cell(c, metric, kind))
            speeds = []
            for c in ours:
                text, speed = ratio(c, metric, kind)
                cells.append("skipped" if c in skipped else text)
                speeds.append(speed)
            for a, b, _ in pairs:
                cells.append(twin_ratio(a, b, metric, kind))
            out.append("| " + " | ".join(cells) + " |")
            if kind in ("thr", "time") and not metric.startswith("cpu_") and any(s is not None for s in speeds):
                chart.append((SHORT.get(metric) or label.replace("fio ", "fio "), speeds))
        out.append("")
        return chart

    def twin_ratio(col, v1, metric, kind):
        """col / v1 of the medians (e.g. format 2 / format 1); "slower"
        (or "larger") where col loses."""
        a, b = med(col, metric), med(v1, metric)
        if a is None or not b or kind == "check":
            return "-"
        r = a / b
        worse = r < 1 if kind == "thr" else r > 1
        return "%.2f%s" % (r, (" slower" if kind not in ("size", "mem") else " larger") if worse and abs(r - 1) > 0.005 else "")

    def fio_cell(col, metric):
        """% of tmpfs, per round, median (min..max), then MiB/s."""
        pcts = []
        for (c, m, r), v in by_round.items():
            if c == col and m == metric:
                t = by_round.get(("tmpfs", metric, r))
                if t:
                    pcts.append(100 * v / t)
        mib = med(col, metric)
        if mib is None:
            return "-"
        if not pcts:
            return fmt(mib, "thr")
        if len(pcts) == 1:
            return "%s%%, %s" % (pct(pcts[0]), fmt(mib, "thr"))
        return "%s%% (%s..%s), %s" % (pct(statistics.median(pcts)), pct(min(pcts)), pct(max(pcts)), fmt(mib, "thr"))

    chart = table(ROWS)
    if any(values.get((c, m)) for c in columns for m, _, _ in FIO_ROWS):
        out.append("fio (psync, buffered, the file's page cache dropped before each job; one file of the given size per job): tmpfs in MiB/s; the other columns as a percentage of tmpfs in the same round, median (min..max), then the median MiB/s.")
        out.append("")
        chart += table(FIO_ROWS, fio=True)
    if any(values.get((c, m)) for c in columns for m, _, _ in MEM_ROWS):
        out.append("The daemon's memory (VmRSS once mounted; VmHWM during each row, reset between rows through /proc/PID/clear_refs), MiB; for the daemonized columns the forked daemon's.")
        out.append("")
        table(MEM_ROWS)
    print("\n".join(out))

    with open(dat_path, "w") as f:
        if chart and ours:
            f.write("row\t" + "\t".join(ours) + "\n")
            for label, speeds in chart:
                f.write('"%s"\t' % label + "\t".join("NaN" if s is None else "%.3f" % s for s in speeds) + "\n")


if __name__ == "__main__":
    main()
