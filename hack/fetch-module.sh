#!/usr/bin/env bash
# fetch-module.sh MODULE VERSION SHA256 DEST
#
# Puts the source of the Go module MODULE@VERSION into DEST (replacing it), as
# the Go module proxy serves it: the module zip from the module cache when
# `go` has downloaded it, otherwise from the first proxy of GOPROXY. The zip
# must have the SHA256 given, so a build never runs code other than what was
# pinned.
#
# Why not `go mod download`: the proxy this project builds from serves some
# modules' zip but refuses their go.mod (403), so go refuses the module
# (github.com/fluxcd/helm-controller v1.4.5). A module built from its own
# directory needs neither: it is the main module, and only its dependencies'
# go.mod files are fetched.
set -euo pipefail

if [ $# -ne 4 ]; then
	echo "usage: $0 MODULE VERSION SHA256 DEST" >&2
	exit 2
fi
module=$1 version=$2 want=$3 dest=$4
go=${GO:-go}

# The proxy protocol and the module cache escape capitals as !lowercase.
escaped=$(printf '%s' "$module" | sed 's/[A-Z]/!\L&/g')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

zip="$($go env GOMODCACHE)/cache/download/$escaped/@v/$version.zip"
if [ ! -f "$zip" ]; then
	proxy=$($go env GOPROXY)
	proxy=${proxy%%[,|]*}
	case $proxy in
	off | direct | "")
		echo "fetch-module: $module@$version is not in the module cache and GOPROXY ($($go env GOPROXY)) names no proxy to fetch it from" >&2
		exit 1
		;;
	esac
	echo ">> fetching $module@$version from $proxy"
	curl -fsSL -o "$tmp/module.zip" "$proxy/$escaped/@v/$version.zip"
	zip=$tmp/module.zip
fi

got=$(sha256sum "$zip" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	echo "fetch-module: $zip has SHA256 $got, want $want: not the pinned $module@$version" >&2
	exit 1
fi

# Module zips hold every file under <module>@<version>/.
unzip -q "$zip" -d "$tmp/src"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/src/$module@$version" "$dest"
chmod -R u+w "$dest"
