#!/bin/sh
# Instructions per call of every tier on cases A-E, counted by valgrind's
# callgrind, printed as the Markdown table of docs/performance.md: one
# call is the count for 2N calls minus the count for N, over N (N = 1,000;
# 100,000 for cc, whose build varies by thousands of instructions).
#
#   sh bench/counts.sh [BENCH] [--unfixed | --fresh]
#
# BENCH defaults to build/bin/wrapbake-bench.  Takes a few minutes.
set -eu
bench=${1:-build/bin/wrapbake-bench}
mode=${2:-}
count() {  # tier case calls
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" $mode \
        --case "$2" --tier "$1" --calls "$3" 2>&1 |
        sed -n 's/.*refs: *//p' | tr -d ,
}
per_call() {  # tier case
    n=1000
    [ "$1" = cc ] && n=100000
    a=$(count "$1" "$2" 1000)
    b=$(count "$1" "$2" $((n + 1000)))
    echo $(((b - a + n / 2) / n))
}
echo "| case | direct | interp | tcc | cc | aot | interp − direct | tcc − direct | cc − direct | aot − direct | tcc / interp | tcc / cc |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for c in A B C D E; do
    d=$(per_call direct $c)
    i=$(per_call interp $c)
    t=$(per_call tcc $c)
    k=$(per_call cc $c)
    a=$(per_call aot $c)
    awk -v c=$c -v d=$d -v i=$i -v t=$t -v k=$k -v a=$a 'function f(n) {
            s = sprintf("%d", n); o = "";
            while (length(s) > 3) { o = "," substr(s, length(s) - 2) o;
                                    s = substr(s, 1, length(s) - 3) }
            return s o }
        BEGIN { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f |\n",
                c, f(d), f(i), f(t), f(k), f(a), f(i - d), f(t - d), f(k - d),
                f(a - d), (t - d) / (i - d), (t - d) / (k - d) }'
done
