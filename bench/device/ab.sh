#!/usr/bin/env bash
# An A/B on the GPU machine, from the repository root: each bench binary staged in .gpu/bin
# runs the same sweep in its own process, tuned from its own empty cache, the binaries
# alternated for ROUNDS rounds (the later rounds reuse each binary's cache, so they time the
# same choices again). Each output goes to $OUT/BIN-ROUND.txt, each tuning cache to
# $OUT/cache-BIN.tsv, and the NVIDIA driver's compiled shaders of each binary's first round
# to $OUT/shaders-BIN.bin (for bench/driver_sass.py: registers and instruction counts).
#
#   ROUNDS=2 bash bench/device/ab.sh "--conv --tensor-cores --by-kernel --only 'k3x3 s1 p1'" old new
set -u
cd "$(dirname "$0")/../.."
sweep=$1; shift
mkdir -p .gpu/bin && { [ ! -f .gpu/bins.tar.xz ] || tar xJf .gpu/bins.tar.xz -C .gpu/bin; }
bash .gpu/run.sh true
W=/tmp/ab; mkdir -p $W
for round in $(seq 1 "${ROUNDS:-1}"); do
  for b in "$@"; do
    mkdir -p $W/shaders-$b
    (
      export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=$W/shaders-$b
      export __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 TESSERA_AUTOTUNE_CACHE=$W/cache-$b.tsv
      eval "timeout 300 bash .gpu/run.sh .gpu/bin/$b $sweep"
    ) > "$OUT/$b-$round.txt" 2>&1
    echo "$b round $round: rc $?"
    cp $W/cache-$b.tsv "$OUT/"
    [ "$round" != 1 ] || find $W/shaders-$b -name '*.bin' -exec cp {} "$OUT/shaders-$b.bin" \;
  done
done
