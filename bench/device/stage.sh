#!/usr/bin/env bash
# Builds, here, what the device scripts run and packs it beside .gpu/run.sh: the bench example
# (`bench`), the library's unit tests (`libtest`, the tuned tensor-core GEMM test among them),
# nn/tests/tensor_cores.rs (`tc`) and the training example's tests (`train`: the digits
# learned in f32 and on the tensor cores), stripped, in .gpu/bins.tar.xz (`carry`
# takes 64 MiB). ../shared/device/stage.sh makes .gpu/run.sh and the driver's packages first
# where they are missing. Extra arguments NAME=PATH add binaries (an A/B's other side):
#
#   bash bench/device/stage.sh old=/tmp/old-bench
#   then run on the device, carrying .gpu: bash bench/device/verify.sh (the GPU tests),
#   bash bench/device/publish.sh (BENCHMARKS.md) or bash bench/device/ab.sh SWEEP bench old
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .gpu/run.sh ] || bash ../shared/device/stage.sh
cargo build --release -p tessera-nn --example bench
# The test binaries' paths, from cargo's messages.
tests=$(cargo test --release -p tessera-nn --lib --test tensor_cores --example train --no-run \
  --message-format=json |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["kind"][0], m["executable"])')
stage=$(mktemp -d)
cp target/release/examples/bench "$stage/bench"
while read -r kind path; do
  case $kind in
    lib) cp "$path" "$stage/libtest" ;;
    test) cp "$path" "$stage/tc" ;;
    example) cp "$path" "$stage/train" ;;
  esac
done <<< "$tests"
for extra in "$@"; do cp "${extra#*=}" "$stage/${extra%%=*}"; done
strip "$stage"/*
tar cf - -C "$stage" . | xz -T2 > .gpu/bins.tar.xz
rm -rf "$stage" .gpu/bin
ls -l .gpu/bins.tar.xz
