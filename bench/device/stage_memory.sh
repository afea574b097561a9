#!/usr/bin/env bash
# Builds, here, the tessera side of bench/device/memory.sh and packs it in .gpu/memory.tar.xz.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .gpu/run.sh ] || bash ../shared/device/stage.sh
cargo build --release -p tessera-nn --example rows_bench --example sort_bench
cargo build --release --example std_rows --example elementwise --example std_scan
stage=$(mktemp -d)
cp target/release/examples/{rows_bench,sort_bench,std_rows,elementwise,std_scan} "$stage/"
strip "$stage"/*
tar cf - -C "$stage" . | xz -T2 > .gpu/memory.tar.xz
rm -rf "$stage"
ls -l .gpu/memory.tar.xz
