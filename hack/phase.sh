#!/usr/bin/env bash
# phase.sh LOG NAME CMD...   run CMD and append "NAME<TAB>SECONDS<TAB>ok|failed" to LOG
# phase.sh LOG --summary     print the phases of LOG as a table, slowest last
#
# `make test` times its phases with it (tools, the module's compile, the tests)
# and prints the table at the end, passed or not, so a slow run says where
# its time went. Tools built side by side (TOOLS_JOBS) overlap: their rows add
# up to more than the tools phase.
set -uo pipefail

log=$1
shift
if [ "${1:-}" = "--summary" ]; then
	[ -s "$log" ] || exit 0
	echo
	echo "Time by phase (tools are built side by side; their rows overlap):"
	awk -F'\t' '{ printf "  %-34s %4dm%02ds  %s\n", $1, $2 / 60, $2 % 60, $3 }' "$log"
	exit 0
fi

name=$1
shift
start=$(date +%s)
"$@"
status=$?
mkdir -p "$(dirname "$log")"
printf '%s\t%d\t%s\n' "$name" $(($(date +%s) - start)) "$([ $status -eq 0 ] && echo ok || echo failed)" >>"$log"
exit $status
