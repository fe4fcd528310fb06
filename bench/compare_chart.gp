# bench/compare_chart.gp: bench/compare.sh's chart. Called as
#   gnuplot -e "datafile='x.dat'; outfile='x.svg'; title='...'" compare_chart.gp
# datafile: a header line, then one line per row: "label" and the speed-up
# of each encryptfs transport over the best peer (> 1: encryptfs faster;
# for time rows it is best peer time / encryptfs time).
set terminal svg size 1200,600 dynamic font "sans,12" background rgb "white"
set output outfile
set title title
set datafile separator "\t"
set datafile missing "NaN"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.01<*<0.25 : 4<*<100]
set ytics ("1/16" 0.0625, "1/8" 0.125, "1/4" 0.25, "1/2" 0.5, "1" 1, "2" 2, "4" 4, "8" 8, "16" 16, "32" 32)
set rmargin 10
set bmargin 9
set ylabel "speed vs the best peer (> 1: encryptfs faster; log scale)"
set xtics rotate by -40 scale 0 nomirror
set grid ytics
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb "black"
ncols = system("head -n 1 '" . datafile . "' | awk -F'\t' '{ print NF }'") + 0
plot for [i=2:ncols] datafile using i:xtic(1) title columnheader(i)
