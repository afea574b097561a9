#!/usr/bin/env bash
# The BENCHMARKS.md run, on the GPU machine, from the repository root, with the bench binary
# staged in .gpu/bin (see ../../notes/performance.md for staging): tunes both precisions, then
# each sweep in its own process (f32 GEMM and launch cost, f32 convolutions, PyTorch, tensor
# cores, a second f32 GEMM sweep), and three more PyTorch processes, packing $OUT/run.tgz
# after each stage so a run cut short still returns what it did. About 4 minutes on an H100 or an H200.
#
# Then, here: tar xzf run.tgz -C RUN, and
#   python3 bench/torch_bench.py --fastest bench/results RUN RUN/t1 RUN/t2 RUN/t3
#   cp RUN/autotune.tsv RUN/tessera.csv bench/results/
#   cp -r RUN/tensor-cores RUN/second bench/results/
#   cargo xtask bench-report bench/results --commit <commit> --date <date>
set -u
cd "$(dirname "$0")/../.."
[ -x .gpu/bin/bench ] || { mkdir -p .gpu/bin && tar xJf .gpu/bins.tar.xz -C .gpu/bin; }
bash .gpu/run.sh true
W=/tmp/run; mkdir -p $W/parts
export TESSERA_AUTOTUNE_CACHE=$W/autotune.tsv
T0=$(date +%s)
pack() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $W/stages.txt; tar czf "$OUT/run.tgz" -C $W .; }
# One table from a GEMM sweep's CSV and a convolution sweep's (the second's header dropped).
merge() { { cat "$1/tessera.csv"; tail -n +3 "$2/tessera.csv"; } > "$3/tessera.csv"; }
bench() { bash .gpu/run.sh .gpu/bin/bench "$@" > /dev/null; }
bench --gemm --conv 2> $W/tune1.err; pack tune-f32
bench --gemm --conv --tensor-cores 2> $W/tune2.err; pack tune-tc
bench --gemm --launch --out $W/parts/g
bench --conv --out $W/parts/c; merge $W/parts/g $W/parts/c $W; pack f32
python3 bench/torch_bench.py --out $W > $W/torch.log 2>&1; pack torch
sleep 15
bench --gemm --tensor-cores --out $W/parts/tg
bench --conv --tensor-cores --out $W/parts/tc
mkdir -p $W/tensor-cores; merge $W/parts/tg $W/parts/tc $W/tensor-cores; pack tc
bench --gemm --out $W/second; pack second
# cuDNN's algorithm choices vary by process: the report takes each row's fastest of four.
for i in 1 2 3; do python3 bench/torch_bench.py --out $W/t$i > $W/t$i.log 2>&1; done; pack torch-more
