"""address_reads= / address_writes= of k(...) and k.bind(...): the buffers a kernel reaches
through device addresses, declared so that cubec orders and taints them like bound ones
(cubec_launch_desc.address_buffers; the ordering and failures themselves are checked in C,
tests/vulkan/test_address_buffers.c, since Python has no call that hands out an address yet).
Here: the declaration reaches the launch, leaves its result right (checked against numpy), and
bad declarations are refused naming the argument."""

import numpy as np
import pytest

import cubec
from conftest import saxpy_info


def test_declared_launches_and_bound_launches_run(dev, saxpy):
    n = 64
    x = np.arange(n, dtype=np.float32)
    a, b, c = dev.buffer(x), dev.buffer(2 * x), dev.empty(n)
    r, w = dev.zeros(16), dev.zeros(16)
    saxpy(a, b, c, groups=1, info=saxpy_info(n, 3.0), address_reads=[r], address_writes=(w, r))
    np.testing.assert_array_equal(c.numpy(), 3.0 * x + 2 * x)
    launch = saxpy.bind(a, b, c, groups=1, info=saxpy_info(n, 0.5), address_writes=[w])
    del w  # the bound launch keeps what it declares alive
    launch()
    np.testing.assert_array_equal(c.numpy(), 0.5 * x + 2 * x)
    with pytest.raises(TypeError, match="a bound launch takes only info="):
        launch(address_reads=[r])


def test_bad_declarations_are_refused(dev, saxpy):
    n = 64
    a, b, c = dev.zeros(n), dev.zeros(n), dev.zeros(n)
    info = saxpy_info(n, 1.0)
    with pytest.raises(TypeError, match="address_reads must be a sequence of cubec.Buffer"):
        saxpy(a, b, c, groups=1, info=info, address_reads=5)
    with pytest.raises(TypeError, match=r"address_writes\[1\] is not a cubec.Buffer"):
        saxpy(a, b, c, groups=1, info=info, address_writes=[a, "c"])
    many = [dev.zeros(4) for _ in range(30)]
    with pytest.raises(cubec.InvalidArgument, match="more than 32 buffers bound and reached"):
        saxpy.bind(a, b, c, groups=1, info=info, address_reads=many)
    other = cubec.Device()
    try:
        with pytest.raises(cubec.InvalidArgument, match=r"address_reads\[0\] belongs to another"):
            saxpy(a, b, c, groups=1, info=info, address_reads=[other.zeros(4)])
    finally:
        other.close()
    # The declaration reaches cubec_launch, which refuses a released buffer by its place.
    gone = dev.zeros(4)
    gone.release()
    with pytest.raises(cubec.Error, match=r"desc->address_buffers\[1\]"):
        saxpy(a, b, c, groups=1, info=info, address_reads=[a], address_writes=[gone])
    # The refusals queued nothing: c still holds its zeros.
    np.testing.assert_array_equal(c.numpy(), np.zeros(n, np.float32))
