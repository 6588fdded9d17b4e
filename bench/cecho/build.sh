#!/bin/sh
# Builds bench/cecho/echo.c as BenchmarkCapabilityRuntimeWasmC does (the
# benchmark builds it itself; this is for building or checking by hand):
# natively with gcc, and for wasm32-wasi with clang and wasi-libc.
# Debian: apt-get install gcc clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32
# Usage: build.sh OUTDIR  (CLANG, CC and WASI_SYSROOT override the tools)
set -eu
out=${1:?usage: build.sh OUTDIR}
here=$(dirname "$0")
cc=${CC:-gcc}
clang=${CLANG:-clang-14}
"$cc" -O2 -o "$out/cecho" "$here/echo.c"
"$cc" -O2 -static -o "$out/cecho-static" "$here/echo.c"
"$clang" ${WASI_SYSROOT:+--sysroot="$WASI_SYSROOT"} --target=wasm32-wasi -O2 -Wl,--strip-all -o "$out/cecho.wasm" "$here/echo.c"
