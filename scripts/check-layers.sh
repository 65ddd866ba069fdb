#!/bin/sh
# The library's five layers include only downward: core <- spec <- abi <-
# gen <- tiers.  Each #include "..." of a file under src/LAYER must name a
# header of its own layer or of one below it (the public header aside).
# Prints each include that points upward; exits 1 if there is any.
set -eu
cd "$(dirname "$0")/.."
rank() {
    case $1 in
    core) echo 0 ;; spec) echo 1 ;; abi) echo 2 ;; gen) echo 3 ;;
    tiers) echo 4 ;; *) echo 9 ;;
    esac
}
bad=0
files=0
for layer in core spec abi gen tiers; do
    mine=$(rank $layer)
    for f in src/$layer/*.c src/$layer/*.h; do
        [ -e "$f" ] || continue
        files=$((files + 1))
        for inc in $(sed -n 's/^#include "\(.*\)".*/\1/p' "$f"); do
            case $inc in
            ../*/*) other=$(echo "$inc" | cut -d/ -f2) ;;
            */*) other=unknown ;;
            *) other=$layer ;;
            esac
            if [ "$(rank "$other")" -gt "$mine" ]; then
                echo "check-layers: $f includes $inc, above $layer"
                bad=1
            fi
        done
    done
done
if [ $bad -eq 0 ]; then
    echo "check-layers: $files files include only downward: 1 passed, 0 failed"
else
    echo "check-layers: 0 passed, 1 failed"
fi
exit $bad
