# SPDX-License-Identifier: MIT
# Decision cost vs points per backend (scripts/bench.sh passes res, out).
# Data files: dc-FAMILY-STICKY-BACKENDS.dat with
# "points steer_ns floor_ns ratio". Left: ns; right: ratio to the floor
# measured alongside (robust to the host's drift between cells).
set terminal svg size 1100,620 dynamic enhanced font "sans,11" background "white"
set output out
set multiplot layout 1,2 title "steer\\_lookup decision cost (BPF\\_PROG\\_TEST\\_RUN, medians)"
set xlabel "points per backend"
set logscale x 2
set xtics ("160" 160, "1024" 1024, "4096" 4096)
set xrange [120:5500]
set yrange [0:*]
set grid ytics
set key below horizontal maxrows 4 font "sans,9"
f(b, s, fam) = sprintf("%s/dc-%s-%d-%d.dat", res, fam, s, b)
B = "1 4 16 64"
set ylabel "ns per decision"
set title "ns per decision"
plot for [i = 1:4] f(int(word(B, i)), 0, "IPv4") using 1:2 \
	with linespoints lw 2 pt 7 lc i title sprintf("IPv4, %s backends", word(B, i)), \
     for [i = 1:4] f(int(word(B, i)), 0, "IPv6") using 1:2 \
	with linespoints lw 1 dt 2 pt 6 lc i title sprintf("IPv6, %s backends", word(B, i)), \
     f(16, 1, "IPv4") using 1:2 with linespoints lw 2 dt 4 pt 5 lc 7 \
	title "IPv4, 16 backends, sticky hit", \
     f(16, 0, "IPv4") using 1:3 with linespoints lw 2 pt 4 lc rgb "black" \
	title "floor (one fixed socket)"
set ylabel "x floor"
set title "ratio to the floor measured alongside"
set key below horizontal maxrows 4 font "sans,9"
plot for [i = 1:4] f(int(word(B, i)), 0, "IPv4") using 1:4 \
	with linespoints lw 2 pt 7 lc i title sprintf("IPv4, %s backends", word(B, i)), \
     for [i = 1:4] f(int(word(B, i)), 0, "IPv6") using 1:4 \
	with linespoints lw 1 dt 2 pt 6 lc i title sprintf("IPv6, %s backends", word(B, i)), \
     f(16, 1, "IPv4") using 1:4 with linespoints lw 2 dt 4 pt 5 lc 7 \
	title "IPv4, 16 backends, sticky hit", \
     3 with lines lw 2 dt 3 lc rgb "red" title "target: 3x"
unset multiplot
