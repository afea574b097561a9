"""How the bench scripts time a CUDA launch, as the Rust examples time theirs
(`examples/shared/timing.rs`): launches that keep the GPU busy for at least 1 s first (an
idle H200's clocks take a while to come back: 200 ms were not always enough), then the median
of 5 timings of `reps` launches by CUDA events. Copy it beside a script that imports it when staging for the device.
"""
import time

import torch


def time_ms(run, reps=20, warm_up_s=1.0):
    """Milliseconds per launch of `run`."""
    start = time.perf_counter()
    while time.perf_counter() - start < warm_up_s:
        for _ in range(reps):
            run()
        torch.cuda.synchronize()
    times = []
    for _ in range(5):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(reps):
            run()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) / reps)
    return sorted(times)[2]
