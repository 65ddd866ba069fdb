#!/bin/sh
# Installs the Debian packages wrapbake builds and tests with, when missing.
# Run by `make` once per build tree; safe to run again.
set -eu

# python3-torch: the conformance suite runs PyTorch itself (tests/torch).
packages="build-essential binutils pkg-config libtcc-dev tcc libdlpack-dev
libcriterion-dev libyaml-dev python3-torch"

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "install-deps: not root and no sudo; install these yourself:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
