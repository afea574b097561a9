#!/usr/bin/env bash
# The GPU tests, on the GPU machine, from the repository root, with the binaries that
# bench/device/stage.sh packed: the library's unit tests (the tuned tensor-core GEMM among
# them) and nn/tests/tensor_cores.rs, each against its f64 or f32 reference, and the
# training example's tests (the held-out digits each precision gets right print here).
# Their output goes to $OUT/libtest.txt, $OUT/tc.txt and $OUT/train.txt; the last lines
# print here. One to three minutes on an H100, most of it the driver compiling kernels.
set -u
cd "$(dirname "$0")/../.."
[ -x .gpu/bin/bench ] || { mkdir -p .gpu/bin && tar xJf .gpu/bins.tar.xz -C .gpu/bin; }
bash .gpu/run.sh true
status=0
for test in libtest tc train; do
  (cd .gpu/bin && timeout 280 bash ../run.sh "./$test" --nocapture) > "$OUT/$test.txt" 2>&1 ||
    status=1
  tail -n 8 "$OUT/$test.txt"
done
grep -h "held-out digits right" "$OUT/train.txt"
exit $status
