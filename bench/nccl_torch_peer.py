#!/usr/bin/env python3
"""NCCL through PyTorch on the GPUs torch sees: the peer of `cubec bench`'s multi.* rows.

    python3 bench/nccl_torch_peer.py [--quick]

Prints, in the format of ../shared/peers/cuda_c_peer that bench/side_by_side.py reads (a header
line "# figure median min max n unit", then one line per figure, words after the unit being
notes), for 1, 16 and 256 MiB of float32:

  nccl.allreduce_<S>MiB   an in-place sum all-reduce over every GPU (one process per GPU, NCCL
                          backend), as bus bandwidth the way NCCL's tests define it:
                          2(n-1)/n * bytes / time, n the number of ranks (cubec's
                          multi.allreduce uses the same definition). With one GPU there is one
                          rank, and NCCL's 1-rank all-reduce is a copy: a cudaMemcpyAsync out of
                          place, nothing at all in place (torch's all_reduce is in place). The
                          bus factor 2(n-1)/n is 0 then, so the line gives instead the bytes /
                          time of NCCL's 1-rank out-of-place path (all_gather_into_tensor, the
                          same memcpy) and says "ranks=1 copy" after the unit.
  torch.copy_peer_<S>MiB  a copy from GPU 0 to GPU 1 (Tensor.copy_, peer access where the GPUs
                          have it), in bytes / time; with one GPU, a copy within it ("same-gpu"
                          after the unit), as cubec's multi.copy_peer on one GPU is.

Each repetition is timed by the wall clock from the call to a torch.cuda.synchronize() after it
(cubec's rows are wall time too), on rank 0, after a barrier that lines the ranks up; median, min
and max of 21 repetitions (11 at 256 MiB) after 3 warm-ups. Every result is checked against the
host's expectation once. bench/h200_side_by_side.sh runs this where PyTorch is installed.
"""
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES_MIB = (1, 16, 256)
WARMUP = 3


def reps_for(mib, quick):
    if quick:
        return 3
    return 11 if mib >= 256 else 21


def line(name, values, unit, notes=""):
    print("%-44s %12.4g %12.4g %12.4g %5d  %s%s" % (
        name, statistics.median(values), min(values), max(values), len(values), unit,
        " " + notes if notes else ""), flush=True)


def sync(devices):
    for d in devices:
        torch.cuda.synchronize(d)


def timed(fn, reps, before=None, devices=(None,)):
    """Wall seconds of fn() up to a sync of `devices` (None: the current one), `reps` times after
    the warm-ups."""
    out = []
    for i in range(WARMUP + reps):
        if before:
            before()
        sync(devices)
        t0 = time.perf_counter()
        fn()
        sync(devices)
        if i >= WARMUP:
            out.append(time.perf_counter() - t0)
    return out


def copy_peer(quick):
    """torch.copy_peer_<S>MiB: GPU 0 to GPU 1, or within GPU 0 when it is the only one."""
    two = torch.cuda.device_count() >= 2
    dst_dev = torch.device("cuda:1" if two else "cuda:0")
    for mib in SIZES_MIB:
        n = (mib << 20) // 4
        src = torch.arange(n, dtype=torch.float32, device="cuda:0")
        dst = torch.empty(n, dtype=torch.float32, device=dst_dev)
        # Both GPUs synced: the copy's completion is the destination's as much as the source's.
        secs = timed(lambda: dst.copy_(src, non_blocking=True), reps_for(mib, quick),
                     devices=(torch.device("cuda:0"), dst_dev))
        if not torch.equal(dst.cpu(), src.cpu()):
            raise SystemExit("torch.copy_peer_%dMiB: the copy differs from its source" % mib)
        line("torch.copy_peer_%dMiB" % mib, [(mib << 20) / s * 1e-9 for s in secs], "GB/s",
             "gpu0->gpu1" if two else "same-gpu")
        del src, dst
        torch.cuda.empty_cache()


def rank_main(rank, world, init_file, quick):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="file://" + init_file, rank=rank,
                            world_size=world, device_id=torch.device("cuda", rank))
    try:
        for mib in SIZES_MIB:
            n = (mib << 20) // 4
            reps = reps_for(mib, quick)
            # Small integers: every sum is exact in float32, so the check is an equality.
            x = (torch.arange(n, device="cuda", dtype=torch.int32) % 1024 + rank).float()
            if world > 1:
                work = x.clone()

                def reset():
                    # Every repetition sums the same inputs; the barrier lines the ranks up.
                    work.copy_(x)
                    dist.barrier()

                secs = timed(lambda: dist.all_reduce(work, op=dist.ReduceOp.SUM), reps,
                             before=reset)
                want = (torch.arange(n, device="cuda", dtype=torch.int32) % 1024).float() * world \
                    + sum(range(world))
                if not torch.equal(work, want):
                    raise SystemExit("nccl.allreduce_%dMiB: wrong sum on rank %d" % (mib, rank))
                factor = 2.0 * (world - 1) / world
                notes = "busbw ranks=%d" % world
            else:
                out = torch.empty_like(x)
                secs = timed(lambda: dist.all_gather_into_tensor(out, x), reps)
                if not torch.equal(out, x):
                    raise SystemExit("nccl.allreduce_%dMiB: the 1-rank copy differs" % mib)
                factor = 1.0
                notes = "ranks=1 copy"
            if rank == 0:
                line("nccl.allreduce_%dMiB" % mib, [factor * (mib << 20) / s * 1e-9 for s in secs],
                     "GB/s", notes)
            del x
            torch.cuda.empty_cache()
    finally:
        dist.destroy_process_group()


def main(argv):
    quick = "--quick" in argv
    if not torch.cuda.is_available():
        print("# no CUDA device: nothing measured")
        return 1
    world = torch.cuda.device_count()
    nccl = torch.cuda.nccl.version()
    nccl = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
    print("# device %s x%d, torch %s, NCCL %s" % (
        torch.cuda.get_device_name(0), world, torch.__version__, nccl), flush=True)
    if world == 1:
        print("# one GPU: NCCL's 1-rank all-reduce is a copy (a memcpy out of place, nothing in "
              "place), so nccl.allreduce_* give the bytes / time of that copy (ranks=1 copy) and "
              "torch.copy_peer_* a copy within the GPU (same-gpu)")
    print("%-44s %12s %12s %12s %5s  %s" % ("# figure", "median", "min", "max", "n", "unit"),
          flush=True)
    copy_peer(quick)
    fd, init_file = tempfile.mkstemp(prefix="nccl_torch_peer.")
    os.close(fd)
    os.unlink(init_file)  # the file store creates it; a leftover one would hold stale keys
    try:
        mp.spawn(rank_main, args=(world, init_file, quick), nprocs=world, join=True)
    finally:
        if os.path.exists(init_file):
            os.unlink(init_file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
