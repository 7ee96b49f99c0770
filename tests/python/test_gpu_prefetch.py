"""The lowering pass prefetch_shared: a loop annotated "kiln.prefetch_shared" whose body copies
tiles into shared memory and then computes on them loads the next step's tiles into each
thread's registers before the computation of this step. Checked on the lowered IR (the
registers, the loads of step k + 1 before the barrier and the product), on the interpreter with
GPU semantics and on OpenCL (PoCL) against NumPy, and compiled with NVRTC; loops of other forms
are left as they are."""
import numpy as np
import pytest

import kiln
from kiln import tir

from gpu_helpers import gpu_tiled_matmul, nvrtc_missing, opencl_missing, skip_unless

KEY = "kiln.prefetch_shared"


def tiled(shape, annotate="k0", value=1):
    """gpu_tiled_matmul's schedule (thread blocks of 8 x 8 outputs, one per thread; A's and B's
    tiles of each step of k0 copied into shared memory by the block's threads), its loop
    `annotate` ("k0", "k1" or None) annotated."""
    _, mod = gpu_tiled_matmul(*shape)
    sch = tir.Schedule(mod)
    k0, k1 = sch.get_loops(sch.get_block("C"))[4:6]
    if annotate is not None:
        sch.annotate({"k0": k0, "k1": k1}[annotate], KEY, value)
    return sch


def inputs(m, n, k):
    rng = np.random.default_rng(0)
    return (rng.uniform(-1, 1, (m, k)).astype("float32"),
            rng.uniform(-1, 1, (k, n)).astype("float32"))


def kernel_text(sch):
    return tir.lower(sch.mod, target="opencl")["main_kernel0"].script()


def test_the_next_steps_tiles_are_loaded_into_registers_before_this_steps_product():
    text = kernel_text(tiled((32, 24, 40)))
    # One element of A's and one of B's 8 x 8 tiles per thread of 64.
    assert 'T.allocate((1,), "float32", scope="local") as A_shared_prefetch' in text
    assert 'T.allocate((1,), "float32", scope="local") as B_shared_prefetch' in text
    # In the loop: this step's tiles from the registers, a barrier, the next step's loads
    # (k_0 + 1: the loop runs 4 of its 5 steps, the last one after it without loads).
    loop = text[text.index("for k_0 in range(4):"):]
    store = loop.index("A_shared[")
    load = loop.index("A_shared_prefetch[0] = A_1[")
    product = loop.index("+ A_shared[i_1 * 8 + k_1]")
    barrier = loop.index("T.storage_sync")
    assert store < barrier < product and store < load < product
    assert "k_0 * 8 + ax0_ax1_fused_1_4 + 8]" in loop[load:product]
    assert KEY not in text
    # The shared tiles are allocated once, around the loop and its last step.
    assert text.count('scope="shared"') == 2


@pytest.mark.parametrize("shape", [(32, 24, 40), (16, 16, 16)])
def test_prefetched_tiles_compute_the_product_on_the_interpreter(shape):
    m, n, k = shape
    a, b = inputs(m, n, k)
    for annotate in ("k0", None):
        c = np.zeros((m, n), "float32")
        tir.interpret(tir.lower(tiled((m, n, k), annotate=annotate).mod, target="opencl"),
                      a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_prefetched_tiles_compute_the_product_on_opencl():
    skip_unless(opencl_missing())
    a, b = inputs(64, 48, 56)
    rt = kiln.build(tiled((64, 48, 56)).mod, target="opencl")
    dev = kiln.opencl(0)
    c = kiln.nd.array(np.zeros((64, 48), "float32"), device=dev)
    rt["main"](kiln.nd.array(a, device=dev), kiln.nd.array(b, device=dev), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_cuda_keeps_the_prefetched_tiles_in_registers():
    skip_unless(nvrtc_missing())
    rt = kiln.build(tiled((64, 64, 64)).mod, target="cuda -arch=sm_80")
    assert "float A_shared_prefetch[1];" in rt.get_source("cuda")
    assert ".local" not in rt.get_source("ptx")


@pytest.mark.parametrize("annotate, value, shape, why", [
    ("k0", 0, (32, 24, 40), "the annotation says no"),
    ("k1", 1, (32, 24, 40), "the loop inside the step copies nothing"),
    ("k0", 1, (32, 24, 8), "a loop of one step has no next step"),
])
def test_other_loops_are_left_as_they_are(annotate, value, shape, why):
    text = kernel_text(tiled(shape, annotate=annotate, value=value))
    assert text == kernel_text(tiled(shape, annotate=None)), why
