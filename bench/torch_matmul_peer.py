#!/usr/bin/env python3
"""PyTorch's float16 matrix multiply on the same GPU: the peer of `cubec bench`'s kernel.gemm_f16.

    python3 bench/torch_matmul_peer.py [SIZE]        (default 4096)

Prints `torch.matmul_f16 <median TFLOP/s> (best <TFLOP/s>)` for C = A @ B with A, B of SIZE x SIZE
float16 on cuda:0, timed with CUDA events around 20 multiplies, median of 9 such rounds after a
warm-up. cuBLAS accumulates in float32 and writes C in float16 (cubec's kernel writes float32: 4
bytes more per element of C, 64 MiB at 4096, which is noise next to 137 GFLOP). bench/side_by_side.py
reads the line; bench/h200_side_by_side.sh runs this where PyTorch is installed.
"""
import statistics
import sys

import torch


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    for _ in range(10):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    per_round = 20
    rates = []
    for _ in range(9):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(per_round):
            torch.matmul(a, b, out=c)
        end.record()
        torch.cuda.synchronize()
        seconds = start.elapsed_time(end) * 1e-3 / per_round
        rates.append(2.0 * n * n * n / seconds * 1e-12)
    print("torch.matmul_f16 %.1f (best %.1f) TFLOP/s at %d^3" % (statistics.median(rates),
                                                                 max(rates), n))


if __name__ == "__main__":
    main()
