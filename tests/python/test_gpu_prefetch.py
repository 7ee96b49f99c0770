"""The lowering pass prefetch_shared: a loop annotated "kiln.prefetch_shared" whose body copies
tiles into shared memory and then computes on them loads the next step's tiles into each
thread's registers before the computation of this step. Checked on the lowered IR (the
registers, the loads of step k + 1 behind a guard, the barriers), on the interpreter with GPU
semantics and on OpenCL (PoCL) against NumPy, and compiled with NVRTC; loops of other forms are
left as they are."""
import numpy as np
import pytest

import kiln
from kiln import te, tir

from gpu_helpers import nvrtc_missing, opencl_missing, skip_unless

KEY = "kiln.prefetch_shared"


def matmul(m, n, k):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def tiled(func, tile=8, annotate="k0", value=1):
    """Thread blocks of tile x tile outputs, one per thread; A's and B's tiles of each step of
    k0 copied into shared memory by the block's threads; the loop `annotate` ("k0", "k1" or
    None) annotated."""
    sch = tir.Schedule(func)
    C = sch.get_block("C")
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, factors=[None, tile])
    j0, j1 = sch.split(j, factors=[None, tile])
    k0, k1 = sch.split(k, factors=[None, tile])
    sch.reorder(i0, j0, i1, j1, k0, k1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    for index in (0, 1):
        shared = sch.cache_read(C, index, "shared")
        sch.compute_at(shared, k0)
        ty, tx = sch.get_loops(shared)[-2:]
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
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
    text = kernel_text(tiled(matmul(32, 24, 40)))
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
    assert "A_1[i_0 * 320 + ax0_4 * 40 + k_0 * 8 + ax1_4 + 8]" in loop[load:product]
    assert KEY not in text
    # The shared tiles are allocated once, around the loop and its last step.
    assert text.count('scope="shared"') == 2


@pytest.mark.parametrize("shape", [(32, 24, 40), (16, 16, 16)])
def test_prefetched_tiles_compute_the_product_on_the_interpreter(shape):
    m, n, k = shape
    a, b = inputs(m, n, k)
    for annotate in ("k0", None):
        c = np.zeros((m, n), "float32")
        tir.interpret(tir.lower(tiled(matmul(m, n, k), annotate=annotate).mod, target="opencl"),
                      a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_prefetched_tiles_compute_the_product_on_opencl():
    skip_unless(opencl_missing())
    a, b = inputs(64, 48, 56)
    rt = kiln.build(tiled(matmul(64, 48, 56)).mod, target="opencl")
    dev = kiln.opencl(0)
    c = kiln.nd.array(np.zeros((64, 48), "float32"), device=dev)
    rt["main"](kiln.nd.array(a, device=dev), kiln.nd.array(b, device=dev), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_cuda_keeps_the_prefetched_tiles_in_registers():
    skip_unless(nvrtc_missing())
    rt = kiln.build(tiled(matmul(64, 64, 64)).mod, target="cuda -arch=sm_80")
    assert "float A_shared_prefetch[1];" in rt.get_source("cuda")
    assert ".local" not in rt.get_source("ptx")


@pytest.mark.parametrize("annotate, value, shape, why", [
    ("k0", 0, (32, 24, 40), "the annotation says no"),
    ("k1", 1, (32, 24, 40), "the loop inside the step copies nothing"),
    ("k0", 1, (32, 24, 8), "a loop of one step has no next step"),
])
def test_other_loops_are_left_as_they_are(annotate, value, shape, why):
    func = matmul(*shape)
    text = kernel_text(tiled(func, annotate=annotate, value=value))
    assert text == kernel_text(tiled(func, annotate=None)), why
