#!/usr/bin/env bash
# The memory-bound rows of BENCHMARKS.md, on the GPU machine, from the repository root: the
# tessera examples staged in .gpu/memory.tar.xz (nn's `rows_bench` and `sort_bench`, the root
# crate's `std_rows`, `elementwise` and `std_scan`; `bash bench/device/stage_memory.sh` builds them)
# beside the PyTorch and Triton scripts of bench/, one process each, in one device command.
# Each writes its Markdown table to memory/NAME.md, packed in $OUT/memory.tgz; then, here:
#
#   tar xzf RUN/memory.tgz -C bench/results
#   printf 'commit C\ndate D\n' > bench/results/memory/run.txt
#   cargo xtask bench-report bench/results --commit C0 --date D0   (C0, D0: the main run's)
set -u
cd "$(dirname "$0")/../.."
mkdir -p .gpu/memory && tar xJf .gpu/memory.tar.xz -C .gpu/memory
bash .gpu/run.sh true
W=/tmp/memory-run; M=$W/memory; rm -rf "$W"; mkdir -p "$M"
tessera() { name=$1; shift; timeout 240 bash .gpu/run.sh ".gpu/memory/$@" > "$M/tessera-$name.md" 2>&1; echo "$name: rc $?"; }
python() { name=$1; shift; timeout 240 python3 "$@" > "$M/python-$name.md" 2>&1; echo "python $name: rc $?"; }
for shape in "16384 4096" "16384 1000" "4096 768" "4096 50257"; do
  tag=${shape// /x}
  tessera "nn-rows-$tag" rows_bench $shape
  python "nn-rows-$tag" bench/nn_rows_bench.py $shape
done
for shape in "16384 4096" "16384 1000" "4096 768"; do
  tag=${shape// /x}-f16
  tessera "nn-rows-$tag" rows_bench $shape f16
  python "nn-rows-$tag" bench/nn_rows_bench.py $shape f16
done
tessera std-rows std_rows
python rows bench/rows_bench.py
tessera elementwise elementwise
python elementwise bench/elementwise_bench.py
tessera scan std_scan
tessera sort sort_bench
python sort bench/sort_bench.py
tar czf "$OUT/memory.tgz" -C "$W" memory
