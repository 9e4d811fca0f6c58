#!/usr/bin/env bash
# phase.sh LOG NAME CMD...   run CMD and append "NAME<TAB>WALL<TAB>CPU<TAB>ok|failed" to LOG
# phase.sh LOG --summary     print the phases of LOG as a table
#
# `make test` times its phases with it (each tool build, generate, vet, the
# tests) and prints the table at the end, passed or not, so a slow run says
# where its time went. WALL is seconds on the clock, CPU the seconds of CPU
# (user + system) CMD and its children used: on a fresh machine the tools'
# CPU, not their order, decides how long the first run takes. Tools built
# side by side (TOOLS_JOBS) overlap: their rows add up to more than the
# phase that contains them.
set -uo pipefail

log=$1
shift
if [ "${1:-}" = "--summary" ]; then
	[ -s "$log" ] || exit 0
	echo
	echo "Time by phase (wall clock, and CPU used; tools are built side by side, their rows overlap):"
	awk -F'\t' '{ printf "  %-38s %4dm%02ds   CPU %4dm%02ds   %s\n", $1, $2 / 60, $2 % 60, $3 / 60, $3 % 60, $4 }' "$log"
	exit 0
fi

# seconds turns bash's `times` output for children ("1m2.345s 0m6.789s")
# into whole seconds of user + system.
seconds() {
	awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); n += p[1] * 60 + p[2] } printf "%d", n }'
}

name=$1
shift
start=$(date +%s)
"$@"
status=$?
# `times` runs in this shell, not a pipeline's subshell, which has no
# children of its own to count.
times_file=$(mktemp)
times >"$times_file"
cpu=$(tail -1 "$times_file" | seconds)
rm -f "$times_file"
mkdir -p "$(dirname "$log")"
printf '%s\t%d\t%d\t%s\n' "$name" $(($(date +%s) - start)) "$cpu" "$([ $status -eq 0 ] && echo ok || echo failed)" >>"$log"
exit $status
