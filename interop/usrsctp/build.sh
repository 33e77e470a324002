#!/bin/sh
# Build the usrsctp interop peer: interop/usrsctp/bin/usrsctp-peer.
# Needs gcc and usrsctp (Debian/Ubuntu: apt-get install -y libusrsctp-dev).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/bin"
if pkg-config --exists usrsctp 2>/dev/null; then
	cflags=$(pkg-config --cflags usrsctp)
	libs=$(pkg-config --libs usrsctp)
else
	cflags="-DINET -DINET6"
	libs="-lusrsctp"
fi
# shellcheck disable=SC2086
exec gcc -std=gnu11 -O2 -g -Wall -Wextra $cflags -o "$here/bin/usrsctp-peer" "$here/peer.c" $libs -lpthread
