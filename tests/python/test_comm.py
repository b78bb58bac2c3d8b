"""cubec.Communicator (cubec_comm_*) and peer copies between devices of one process, on two and
three opens of the test device (lavapipe here), every result against a numpy reference."""

import numpy as np
import pytest

import cubec


@pytest.fixture
def others():
    """Two more opens of the device, validation on (any message fails the test)."""
    devs = [cubec.Device(validation=True), cubec.Device(validation=True)]
    yield devs
    messages = [d.validation_messages for d in devs]
    for d in devs:
        d.close()
    assert messages == [0, 0], "the validation layer reported messages: %r" % messages


def rank_data(n, ranks, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        # Small integers: every sum order gives the same float bits.
        return [rng.integers(-50, 50, n).astype(dtype) for _ in range(ranks)]
    return [rng.integers(-(2**20), 2**20, n).astype(dtype) for _ in range(ranks)]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_all_reduce_on_two_ranks(dev, others, dtype, op):
    devs = [dev, others[0]]
    n = 1001  # not a multiple of anything the implementation might chunk by
    data = rank_data(n, 2, dtype, 7)
    expect = np.sum(data, axis=0, dtype=dtype) if op == "sum" else np.max(data, axis=0)
    with cubec.Communicator(devs) as comm:
        assert comm.size == 2 and comm.devices == tuple(devs) and not comm.closed
        bufs = [d.buffer(a) for d, a in zip(devs, data)]
        comm.all_reduce(bufs, op=op)
        for b in bufs:
            np.testing.assert_array_equal(b.numpy(), expect)
    assert comm.closed


def test_all_reduce_on_three_ranks_with_streams_and_a_count(dev, others):
    devs = [dev] + others
    n = 4099
    data = rank_data(n, 3, "float32", 11)
    with cubec.Communicator(devs) as comm:
        streams = [d.stream() for d in devs]
        bufs = [d.buffer(a, stream=s) for d, a, s in zip(devs, data, streams)]
        count = n - 3
        comm.all_reduce(bufs, count=count, streams=streams)
        expect = [a.copy() for a in data]
        for e in expect:
            e[:count] = np.sum(data, axis=0)[:count]  # the tail past count is left alone
        for b, e, s in zip(bufs, expect, streams):
            np.testing.assert_array_equal(b.numpy(stream=s), e)
        comm.all_reduce(bufs, count=0, streams=streams)  # nothing
        for b, e, s in zip(bufs, expect, streams):
            np.testing.assert_array_equal(b.numpy(stream=s), e)


def test_all_reduce_after_a_kernel_writes_the_input(dev, others, saxpy):
    """The reduction is ordered after the launch that writes rank 0's buffer."""
    from saxpy_kernel import saxpy_info

    n = 2048
    x = np.arange(n, dtype=np.float32)
    other = others[0]
    bx, by, bz = dev.buffer(x), dev.buffer(np.ones(n, np.float32)), dev.empty(n)
    b1 = other.buffer(np.full(n, 5, np.float32))
    saxpy(bx, by, bz, groups=n // 64, info=saxpy_info(n, 2.0))
    with cubec.Communicator([dev, other]) as comm:
        comm.all_reduce([bz, b1])
    expect = 2.0 * x + 1.0 + 5.0
    np.testing.assert_array_equal(bz.numpy(), expect)
    np.testing.assert_array_equal(b1.numpy(), expect)


def test_communicator_refusals_name_the_argument(dev, others):
    a, b = dev, others[0]
    with pytest.raises(TypeError, match="devices must be a sequence of cubec.Device"):
        cubec.Communicator(3)
    with pytest.raises(TypeError, match=r"devices\[1\] must be a cubec.Device"):
        cubec.Communicator([a, "b"])
    with cubec.Communicator([a, b]) as comm:
        x, y = a.zeros(8), b.zeros(8)
        with pytest.raises(cubec.InvalidArgument, match="buffers holds 1 buffers, the comm"):
            comm.all_reduce([x])
        with pytest.raises(cubec.InvalidArgument, match=r"buffers\[0\] is a buffer of rank 1's"):
            comm.all_reduce([y, x])
        with pytest.raises(cubec.InvalidArgument, match="outside the communicator"):
            comm.all_reduce([x, others[1].zeros(8)])
        with pytest.raises(TypeError, match=r"buffers\[1\] holds dtype\('int32'\)"):
            comm.all_reduce([x, b.zeros(8, "int32")])
        with pytest.raises(TypeError, match="the buffers hold float64; collectives take"):
            comm.all_reduce([a.zeros(8, "float64"), b.zeros(8, "float64")])
        with pytest.raises(ValueError, match="op must be 'sum' or 'max', got 'min'"):
            comm.all_reduce([x, y], op="min")
        with pytest.raises(cubec.InvalidArgument, match="count must be an int >= 0, got -1"):
            comm.all_reduce([x, y], count=-1)
        with pytest.raises(cubec.InvalidArgument, match=r"buffers\[0\] holds 32 bytes, fewer"):
            comm.all_reduce([x, y], count=9)
        with pytest.raises(cubec.InvalidArgument, match="streams holds 1 entries"):
            comm.all_reduce([x, y], streams=[None])
        with pytest.raises(cubec.InvalidArgument):
            comm.all_reduce([x, y], streams=[b.stream(), None])  # rank 0's is another device's
        y.write(np.arange(8, dtype=np.float32))
        np.testing.assert_array_equal(y.numpy(), np.arange(8, dtype=np.float32))  # unchanged
    with pytest.raises(cubec.InvalidArgument, match="the communicator was closed"):
        comm.all_reduce([x, y])
    comm.close()  # twice is fine


def test_closing_a_device_of_a_live_communicator_is_deferred(dev):
    other = cubec.Device(validation=True)
    comm = cubec.Communicator([dev, other])
    x, y = dev.buffer(np.ones(4, np.float32)), other.buffer(np.ones(4, np.float32))
    other.close()  # counts as closed at once; freed when the communicator goes
    assert other.closed
    with pytest.raises(cubec.Error, match="closed"):
        comm.all_reduce([x, y])
    del y
    comm.close()  # the deferred close runs here
    comm.close()
    np.testing.assert_array_equal(x.numpy(), np.ones(4, np.float32))


def test_peer_copy_with_streams_on_both_sides(dev, others):
    other = others[0]
    n = 70000
    s0, s1 = dev.stream(), other.stream()
    src = dev.buffer(np.arange(n, dtype=np.int32), stream=s0)
    dst = other.zeros(n, "int32", stream=s1)
    src.copy_to(dst, size=4 * (n - 10), src_offset=40, stream=s0, dst_stream=s1)
    dst.fill(7, stream=s1)  # ordered after the copy on s1: wins
    later = other.zeros(n, "int32", stream=s1)
    src.copy_to(later, stream=s0, dst_stream=s1)
    np.testing.assert_array_equal(dst.numpy(stream=s1), np.full(n, 7, np.int32))
    np.testing.assert_array_equal(later.numpy(stream=s1), np.arange(n, dtype=np.int32))
    with pytest.raises(cubec.InvalidArgument):
        src.copy_to(later, stream=s0, dst_stream=s0)  # dst_stream of the wrong device


def pad(n, dtype):
    """Elements to allocate for n: f16 data moves in 4-byte words (cubec_comm's rule)."""
    return n + (n % 2) if np.dtype(dtype) == np.float16 else n


DTYPES = ["float32", "float16", "int32"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 4097])  # 2 = ranks - 1; 4097 not divisible by 3
def test_all_reduce_every_dtype_and_size_on_three_ranks(dev, others, dtype, n):
    devs = [dev] + others
    data = rank_data(n, 3, dtype, n + 1)
    with cubec.Communicator(devs) as comm:
        for op in ("sum", "max"):
            bufs = [d.buffer(np.resize(a, pad(n, dtype))) if n else d.zeros(2, dtype)
                    for d, a in zip(devs, data)]
            comm.all_reduce(bufs, op=op, count=n)
            expect = np.sum(data, axis=0, dtype=dtype) if op == "sum" else np.max(data, axis=0)
            for b in bufs:
                np.testing.assert_array_equal(b.numpy()[:n], expect)


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_from_each_root(dev, others, dtype):
    devs = [dev] + others
    n = 1001
    data = rank_data(n, 3, dtype, 3)
    with cubec.Communicator(devs) as comm:
        for root in range(3):
            bufs = [d.buffer(np.resize(a, pad(n, dtype))) for d, a in zip(devs, data)]
            comm.broadcast(bufs, root=root, count=n)
            for b in bufs:
                np.testing.assert_array_equal(b.numpy()[:n], data[root])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("total", [1, 2, 10, 4097])
def test_all_gather_and_reduce_scatter_by_shard(dev, others, dtype, total):
    devs = [dev] + others
    with cubec.Communicator(devs) as comm:
        shards = [comm.shard(total, r) for r in range(3)]
        # cubec_mpi_shard's rule: total // n each, one more for the first total % n ranks.
        offset = 0
        for r, (off, cnt) in enumerate(shards):
            assert (off, cnt) == (offset, total // 3 + (r < total % 3))
            offset += cnt
        full = rank_data(total, 3, dtype, total)
        ins = [d.buffer(np.resize(full[0][o:o + k], pad(max(k, 1), dtype)))
               for d, (o, k) in zip(devs, shards)]
        outs = [d.zeros(pad(total, dtype), dtype) for d in devs]
        comm.all_gather(ins, outs, total=total)
        for b in outs:
            np.testing.assert_array_equal(b.numpy()[:total], full[0])

        for op in ("sum", "max"):
            ins = [d.buffer(np.resize(a, pad(total, dtype))) for d, a in zip(devs, full)]
            outs = [d.zeros(pad(max(k, 1), dtype), dtype) for d, (o, k) in zip(devs, shards)]
            comm.reduce_scatter(ins, outs, op=op, total=total)
            expect = np.sum(full, axis=0, dtype=dtype) if op == "sum" else np.max(full, axis=0)
            for b, (o, k) in zip(outs, shards):
                np.testing.assert_array_equal(b.numpy()[:k], expect[o:o + k])


def test_collective_defaults_and_refusals(dev, others):
    a, b = dev, others[0]
    with cubec.Communicator([a, b]) as comm:
        assert comm.transport == "ring"
        # Two opens of one GPU: NCCL refuses a duplicate GPU, and says so.
        assert "nccl: nccl_group_open: devices[0] and devices[1] are the same GPU" in (
            comm.transport_reason)
        x = [a.buffer(np.arange(6, dtype=np.int32)), b.zeros(6, "int32")]
        comm.broadcast(x)  # root 0, all of buffers[0]
        np.testing.assert_array_equal(x[1].numpy(), np.arange(6, dtype=np.int32))
        ins = [a.buffer(np.array([1, 2, 3], np.int32)), b.buffer(np.array([4, 5, 6], np.int32))]
        outs = [a.zeros(6, "int32"), b.zeros(6, "int32")]
        comm.all_gather(ins, outs)  # total: outputs[0]'s 6
        np.testing.assert_array_equal(outs[1].numpy(), np.arange(1, 7, dtype=np.int32))
        comm.reduce_scatter(outs, ins)  # total: inputs[0]'s 6; sums of two equal inputs
        np.testing.assert_array_equal(ins[1].numpy(), np.array([8, 10, 12], np.int32))
        with pytest.raises(cubec.InvalidArgument, match="root"):
            comm.broadcast(x, root=2, count=6)
        with pytest.raises(cubec.InvalidArgument, match="root must be an int >= 0, got -1"):
            comm.broadcast(x, root=-1)
        with pytest.raises(cubec.InvalidArgument, match="rank"):
            comm.shard(10, 2)
        with pytest.raises(TypeError, match=r"outputs\[0\] holds dtype\('float32'\)"):
            comm.all_gather(ins, [a.zeros(6), b.zeros(6)])
        with pytest.raises(cubec.InvalidArgument, match=r"outputs\[0\] is a buffer of rank 1"):
            comm.reduce_scatter(outs, [ins[1], ins[0]])
        with pytest.raises(ValueError, match="op must be 'sum' or 'max'"):
            comm.reduce_scatter(outs, ins, op="prod")
        np.testing.assert_array_equal(ins[1].numpy(), np.array([8, 10, 12], np.int32))
