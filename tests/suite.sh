#!/bin/sh
# Runs one suite of `make test` and prints one line for it: its name and
# the last line of its output, which is the suite's summary.  The whole
# output goes to LOGDIR/NAME.log; a suite that fails prints the end of it.
# Criterion's lines for the tests a filter leaves out ("Test is disabled")
# are dropped.
#
#   sh tests/suite.sh LOGDIR NAME COMMAND
#
# COMMAND is one shell command line; the status is its status.
set -u
if [ $# -ne 3 ]; then
    echo "usage: $0 LOGDIR NAME COMMAND" >&2
    exit 2
fi
mkdir -p "$1" || exit 2
log=$1/$2.log
{ sh -c "$3" 2>&1; echo $? >"$log.rc"; } | grep -v 'Test is disabled$' >"$log"
rc=$(cat "$log.rc")
rm -f "$log.rc"
last=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | sed 's/^\[====\] Synthesis: //')
if [ "$rc" -eq 0 ]; then
    printf '  %-10s %s\n' "$2" "$last"
else
    printf '  %-10s FAILED with status %s; the end of %s, passes left out:\n' \
        "$2" "$rc" "$log"
    grep -v '^\[\(PASS\|RUN \)\]\|^\[====\] Running' "$log" | tail -n 60 |
        sed 's/^/    /'
fi
exit "$rc"
