#!/bin/sh
# bench/engine.sh: run the internal/fileengine engine benchmarks side by side in one
# run and print medians and the ratios the engine is judged by.
#
#   bench/engine.sh                 # full run, -count 5 (a few minutes on 2 cores)
#   COUNT=3 BENCHTIME=200ms bench/engine.sh
#   bench/engine.sh saved.txt       # only summarise an earlier run's output
#
# The machine may be shared: figures are medians of COUNT interleaved passes
# and still noisy.
set -eu
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
BENCHTIME=${BENCHTIME:-300ms}
BENCH=${BENCH:-.}

if [ $# -ge 1 ]; then
	out=$1
else
	out=$(mktemp /tmp/engine-bench.XXXXXX)
	bin=$(mktemp /tmp/core-bench.XXXXXX)
	trap 'rm -f "$bin"' EXIT
	go test -c -o "$bin" ./internal/fileengine/
	# Interleave: COUNT passes over all benchmarks rather than COUNT runs of
	# each in a row, so load changes on a shared machine hit all of them alike.
	i=0
	while [ "$i" -lt "$COUNT" ]; do
		"$bin" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" -test.benchmem | tee -a "$out" >&2
		i=$((i + 1))
	done
	echo "raw output: $out" >&2
fi

awk '
function median(list,   n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j+1] = a[j]; a[j+1] = t }
	if (n % 2) return a[(n+1)/2]
	return (a[n/2] + a[n/2+1]) / 2
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 2; i <= NF; i++) {
		if ($i == "MB/s") mbs[name] = mbs[name] " " $(i-1)
		if ($i == "allocs/op") al[name] = al[name] " " $(i-1)
		if ($i == "ns/op") ns[name] = ns[name] " " $(i-1)
		if ($i == "ratio") rt[name] = rt[name] " " $(i-1)
	}
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
}
function m(name) { return (name in mbs) ? median(mbs[name]) : 0 }
function ratio(label, a, b,   x, y) {
	x = m(a); y = m(b)
	if (x > 0 && y > 0) printf "  %-58s %6.2f   (%s / %s)\n", label, x / y, a, b
}
END {
	printf "%-44s %12s %12s %10s\n", "benchmark (median)", "MB/s", "ns/op", "allocs/op"
	for (k = 1; k <= n; k++) {
		name = order[k]
		printf "%-44s %12.1f %12.0f %10.0f\n", name, m(name), median(ns[name]), median(al[name])
	}
	print ""
	print "ratios (targets: seq/raw >= 0.70, par/seq >= 1.6 on 2 cores)"
	ratio("seq write 10 MiB, one request / raw GCM seal", "SeqWrite/10MiB/all/seq", "RawGCMSeal/10MiB")
	ratio("seq write 10 MiB, 128 KiB requests / raw GCM seal", "SeqWrite/10MiB/128KiB/seq", "RawGCMSeal/10MiB")
	ratio("seq read 10 MiB, one request / raw GCM open", "SeqRead/10MiB/all/seq", "RawGCMOpen/10MiB")
	ratio("seq read 10 MiB, 128 KiB requests / raw GCM open", "SeqRead/10MiB/128KiB/seq", "RawGCMOpen/10MiB")
	ratio("raw GCM seal: 2 goroutines / 1 (what the machine allowed)", "RawGCMSealPar2", "RawGCMSeal/10MiB")
	ratio("par/seq write 10 MiB, one request", "SeqWrite/10MiB/all/par", "SeqWrite/10MiB/all/seq")
	ratio("par/seq read 10 MiB, one request", "SeqRead/10MiB/all/par", "SeqRead/10MiB/all/seq")
	ratio("par/seq write 10 MiB, 128 KiB requests", "SeqWrite/10MiB/128KiB/par", "SeqWrite/10MiB/128KiB/seq")
	ratio("par/seq read 10 MiB, 128 KiB requests", "SeqRead/10MiB/128KiB/par", "SeqRead/10MiB/128KiB/seq")
	ratio("2 workers / seq write, 1 MiB requests", "Workers/w2/1024KiB/write", "Workers/seq/1024KiB/write")
	ratio("2 workers / seq read, 1 MiB requests", "Workers/w2/1024KiB/read", "Workers/seq/1024KiB/read")
	ratio("2 workers / seq write, 128 KiB requests", "Workers/w2/128KiB/write", "Workers/seq/128KiB/write")
	ratio("2 workers / seq read, 128 KiB requests", "Workers/w2/128KiB/read", "Workers/seq/128KiB/read")
	print ""
	print "paired ratios (both sides timed alternately inside one benchmark: most robust to load)"
	for (k = 1; k <= n; k++) if (order[k] in rt) printf "  %-58s %6.2f\n", order[k], median(rt[order[k]])
	if ("Overwrite1MiB/seq" in al) printf "  1 MiB WriteAt allocs/op: seq %d, par %d\n", median(al["Overwrite1MiB/seq"]), median(al["Overwrite1MiB/par"])
}' "$out"
