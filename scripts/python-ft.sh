#!/bin/sh
# python-ft.sh - build (once) and print the path of a free-threaded CPython 3.13
# (python3.13t: configure --disable-gil), from the source Debian 13 ships for its
# python3.13 package.  No distribution here packages a free-threaded build and pyenv
# cannot fetch one offline; the tests of what dlprof says of a build without a GIL use
# this one.  About 2 minutes on 2 cores the first time, then a later call only prints.
#
#   scripts/python-ft.sh            build when missing, print the interpreter's path
#   scripts/python-ft.sh --check    print the path when built, exit 1 otherwise
#
# DLPROF_PYTHONS picks the cache folder (default /var/cache/dlprof/python).
set -e
cache=${DLPROF_PYTHONS:-/var/cache/dlprof/python}
ver=3.13.5
src=python3.13_$ver.orig.tar.xz
md5=dbaa8833aa736eddbb18a6a6ae0c10fa
url=http://deb.debian.org/debian/pool/main/p/python3.13/$src
prefix=$cache/$ver-ft
exe=$prefix/bin/python3.13t

if [ -f "$prefix/.complete" ]; then
	echo "$exe"
	exit 0
fi
[ "$1" = "--check" ] && exit 1
if [ "$(id -u)" != 0 ]; then
	echo "python-ft: building $prefix needs root" >&2
	exit 1
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ ! -f "$prefix/.complete" ]; then
	echo "python-ft: building CPython $ver free-threaded into $prefix (about 2 minutes, once)" >&2
	work=$cache/build.$$
	rm -rf "$work" "$prefix"
	mkdir -p "$work"
	trap 'rm -rf "$work"' EXIT
	if [ ! -f "$cache/$src" ] || [ "$(md5sum <"$cache/$src" | cut -d' ' -f1)" != "$md5" ]; then
		curl -fsS -o "$cache/$src.tmp" "$url"
		[ "$(md5sum <"$cache/$src.tmp" | cut -d' ' -f1)" = "$md5" ] || {
			echo "python-ft: $url: not the file Debian 13 lists (md5)" >&2
			exit 1
		}
		mv "$cache/$src.tmp" "$cache/$src"
	fi
	tar -C "$work" -xJf "$cache/$src"
	cd "$work"/Python-$ver
	# the compiler's warnings in a log, shown when the build fails
	{ ./configure -q --disable-gil --prefix="$prefix" --without-ensurepip &&
	  make -s -j"$(nproc)" && make -s install; } >"$work/build.log" 2>&1 || {
		tail -20 "$work/build.log" >&2
		echo "python-ft: the build failed" >&2
		exit 1
	}
	"$exe" -c 'import sys; assert not sys._is_gil_enabled()'
	echo "$ver" >"$prefix/.complete"
fi
echo "$exe"
