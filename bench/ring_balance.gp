# SPDX-License-Identifier: MIT
# Ring balance vs points per backend (scripts/bench.sh passes res, out).
# Data files: ring-N.dat with "points cv_keys_percent cv_arc_percent".
set terminal svg size 900,520 dynamic enhanced font "sans,12" background "white"
set output out
set title "ring balance: coefficient of variation of the backends' shares"
set xlabel "points per backend"
set ylabel "CV (%)"
set logscale xy
set xtics (10, 50, 150, 300, 1024, 4096)
set ytics (0.5, 1, 2, 5, 10, 20, 50)
set xrange [8:5000]
set key top right font "sans,10"
set grid xtics ytics
N = "4 10 32 100"
plot for [i = 1:4] sprintf("%s/ring-%s.dat", res, word(N, i)) using 1:3 \
	with linespoints lw 2 pt 7 lc i \
	title sprintf("N=%s, exact from arcs, mean of seeds", word(N, i)), \
     for [i = 1:4] sprintf("%s/ring-%s.dat", res, word(N, i)) using 1:2 \
	with points pt 6 ps 1.3 lc i \
	title sprintf("N=%s, measured on the keys, one ring", word(N, i)), \
     100 / sqrt(x) with lines dt 2 lw 1 lc rgb "black" title "100/sqrt(points)", \
     10 with lines dt 3 lw 1 lc rgb "red" title "10%"
