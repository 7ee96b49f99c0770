"""The tuner's GPU design space: candidates of the rules auto_bind, cross_thread_reduction and
multi_level_tiling_gpu, sampled and mutated, pass the GPU verifier and compute what NumPy
computes when built for OpenCL and run on an OpenCL device (PoCL on a CPU here), sums to one
value among them (an argmax to one value gets the same sketches, its threads combining (index,
value) pairs), and tiled GEMMs (128 x 128 x 128 and 100 x 60 x 70), a batch matmul and a conv2d
among them, whose CUDA C NVRTC compiles for sm_80, padded against bank conflicts or not; a
candidate the target cannot run is refused with a counted reason, and a draw of tiles outside
their limits is drawn again. Tests that run kernels skip without an OpenCL device, those that
compile CUDA without NVRTC."""
import numpy as np
import pytest

import kiln
from kiln import te, topi
from kiln.autotune import SpaceGenerator

from gpu_helpers import (first_candidates, nvrtc_missing, opencl_missing, padded_conv2d,
                         skip_unless, with_sampled_annotation)


def add_then_sine(m=24, n=10):
    A = te.placeholder((m, n), "float32", name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    C = te.compute((m, n), lambda i, j: te.sin(B[i, j]) + te.cos(B[i, j]), name="C")
    return te.create_prim_func([A, C]), lambda a: np.sin(2 * a + 1) + np.cos(2 * a + 1)


def row_sum(m=6, n=1000):
    A = te.placeholder((m, n), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B]), lambda a: a.sum(axis=1)


def softmax(m=4, n=300):
    X = te.placeholder((m, n), "float32", name="X")
    k1 = te.reduce_axis((0, n), name="k1")
    mx = te.compute((m,), lambda i: te.max(X[i, k1], axis=k1), name="row_max")
    e = te.compute((m, n), lambda i, j: te.exp(X[i, j] - mx[i]), name="exp")
    k2 = te.reduce_axis((0, n), name="k2")
    s = te.compute((m,), lambda i: te.sum(e[i, k2], axis=k2), name="row_sum")
    Y = te.compute((m, n), lambda i, j: e[i, j] / s[i], name="Y")

    def expected(x):
        z = np.exp(x - x.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)
    return te.create_prim_func([X, Y]), expected


def matmul(m=16, n=24, k=20):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C]), lambda a, b: a @ b


def scalar_sum(n=4096):
    A = te.placeholder((n,), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((), lambda: te.sum(A[k], axis=k), name="B")
    return te.create_prim_func([A, B])


WORKLOADS = {"add_then_sine": add_then_sine, "row_sum": row_sum, "softmax": softmax,
             "matmul": matmul}


def run_candidate(candidate, func, expected, seed=0):
    """Builds the candidate for OpenCL, runs it on device 0 and compares with NumPy."""
    rng = np.random.default_rng(seed)
    shapes = [[int(d) for d in func.buffer_map[p].shape] for p in func.params]
    inputs = [rng.uniform(-1, 1, size=s).astype("float32") for s in shapes[:-1]]
    device = kiln.opencl(0)
    arrays = [kiln.nd.array(x, device=device) for x in inputs]
    arrays.append(kiln.nd.array(np.zeros(shapes[-1], "float32"), device=device))
    kiln.build(candidate.mod, target="opencl")["main"](*arrays)
    np.testing.assert_allclose(arrays[-1].numpy(), expected(*inputs), rtol=1e-4, atol=1e-4)


def test_sketches_per_workload():
    counts = {name: len(SpaceGenerator(make()[0], "opencl").sketches)
              for name, make in WORKLOADS.items()}
    # A row sum: bound one row per thread, or a block of threads per row. A softmax: both for
    # each of its two reductions. A matmul has more outputs than steps and reuses its operands:
    # tiled for thread blocks, virtual threads and threads.
    assert counts == {"add_then_sine": 1, "row_sum": 2, "softmax": 4, "matmul": 1}
    text = SpaceGenerator(row_sum()[0], "opencl").sketches[1].as_python()
    assert 'thread_axis="threadIdx.x"' in text and 'thread_axis="blockIdx.x"' in text
    text = SpaceGenerator(matmul()[0], "opencl").sketches[0].as_python()
    for axis in ("blockIdx.x", "vthread.x", "threadIdx.x"):
        assert f'thread_axis="{axis}"' in text
    assert 'storage_scope="shared"' in text and 'storage_scope="local"' in text


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_sketch_samples_candidates_that_compute_the_function(name):
    skip_unless(opencl_missing())
    func, expected = WORKLOADS[name]()
    space = SpaceGenerator(func, "opencl")
    for sketch in range(len(space.sketches)):
        candidate = space.sample(sketch, seed=sketch + 1)
        assert candidate is not None, space.rejections
        run_candidate(candidate, func, expected, seed=sketch)
    assert redrawn_only(space.rejections)


def redrawn_only(rejections):
    """Whether every refusal is of a draw of tiles outside their limits, drawn again."""
    return all(reason.startswith("sample: Gpu") for reason in rejections)


def test_mutated_thread_counts_still_compute_the_function():
    skip_unless(opencl_missing())
    func, expected = row_sum()
    space = SpaceGenerator(func, "opencl")
    candidate = space.sample(1, seed=3)
    seen = {candidate.hash}
    for seed in range(6):
        mutated = space.mutate(candidate.decisions, seed=seed)
        if mutated is None:
            continue
        child = space.replay(1, mutated)
        assert child is not None, space.rejections
        if child.hash not in seen:
            seen.add(child.hash)
            run_candidate(child, func, expected, seed=seed)
    assert len(seen) >= 2  # some mutation changed the thread count


def test_a_small_thread_limit_is_respected_on_the_device():
    skip_unless(opencl_missing())
    func, expected = row_sum(4, 500)
    space = SpaceGenerator(func, "opencl -max_threads_per_block=32")
    for sketch in range(len(space.sketches)):
        text = space.sketches[sketch].as_python()
        assert "64" not in text.split("candidates=")[1].split("]")[0]
        run_candidate(space.sample(sketch, seed=5), func, expected)


def test_a_candidate_the_target_cannot_run_is_refused_with_its_reason():
    # The cross-thread sketch of a row sum keeps 16 or more partial results in shared memory,
    # over a limit of 16 bytes.
    space = SpaceGenerator(row_sum()[0], "opencl -max_shared_memory_per_block=16")
    assert all(space.sample(1, seed) is None for seed in range(3))
    assert space.rejections == {"postproc verify_gpu_code: GpuSharedMemoryError": 3}


def test_a_sum_to_one_value_gets_one_thread_one_block_and_two_stage_sketches():
    space = SpaceGenerator(scalar_sum(), "opencl")
    texts = [sketch.as_python() for sketch in space.sketches]
    assert len(texts) == 3
    assert all("add_unit_loop" in text for text in texts)
    assert "rfactor" in texts[2] and "rfactor" not in texts[1]


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_sketches_of_a_sum_to_one_value_compute_it(n):
    skip_unless(opencl_missing())
    func = scalar_sum(n)
    space = SpaceGenerator(func, "opencl")
    for sketch in range(len(space.sketches)):
        for seed in range(2):
            candidate = space.sample(sketch, seed=seed)
            assert candidate is not None, space.rejections
            run_candidate(candidate, func, lambda a: a.sum(), seed=seed)
    assert space.rejections == {}


def test_an_argmax_to_one_value_gets_the_sketches_of_a_sum():
    """One thread, one thread block, and two stages (rfactor of both values of the pair); the
    GPU verifier lowers a candidate of each."""
    x = te.placeholder((4096,), "float32", name="x")
    space = SpaceGenerator(te.create_prim_func([x, topi.argmax(x)]), "opencl")
    texts = [sketch.as_python() for sketch in space.sketches]
    assert len(texts) == 3
    assert "rfactor" in texts[2] and 'thread_axis="threadIdx.x"' in texts[1]
    assert all(space.sample(sketch, seed=1) is not None for sketch in range(3))
    assert space.rejections == {}


# ---------------------------------------------------------------------------------------------
# multi_level_tiling_gpu: tiled products on the device.

def batch_matmul(b=2, m=24, n=32, k=20):
    A = te.placeholder((b, m, k), "float32", name="A")
    B = te.placeholder((b, k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((b, m, n), lambda p, i, j: te.sum(A[p, i, r] * B[p, r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C]), lambda a, b: a @ b


def gemm_bias_relu(m=48, n=40, k=24):
    """relu(A @ B + bias): the epilogue is inlined into the tiled product's write-back."""
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    bias = te.placeholder((n,), "float32", name="bias")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((m, n), lambda i, j: te.max(C[i, j] + bias[j], 0.0), name="D")
    return te.create_prim_func([A, B, bias, D]), lambda a, b, c: np.maximum(a @ b + c, 0)


TILED = {"gemm_128": lambda: matmul(128, 128, 128), "gemm_100x60x70": lambda: matmul(100, 60, 70),
         "batch_matmul": batch_matmul, "conv2d": padded_conv2d, "gemm_bias_relu": gemm_bias_relu}


@pytest.mark.parametrize("name", sorted(TILED))
def test_tiled_candidates_compute_the_product_on_opencl(name):
    skip_unless(opencl_missing())
    func, expected = TILED[name]()
    space = SpaceGenerator(func, "opencl")
    assert len(space.sketches) == 1
    count = 2 if name == "gemm_128" else 1
    for seed, candidate in enumerate(first_candidates(space, count)):
        script = candidate.mod["main"].script()
        assert 'thread="vthread.x"' in script and 'scope="shared"' in script
        run_candidate(candidate, func, expected, seed=seed)
    assert redrawn_only(space.rejections)


@pytest.mark.parametrize("name", sorted(TILED))
def test_tiled_candidates_compile_with_nvrtc_for_sm_80(name):
    skip_unless(nvrtc_missing())
    func, _ = TILED[name]()
    space = SpaceGenerator(func, "cuda -arch=sm_80")
    for candidate in first_candidates(space, 2):
        rt = kiln.build(candidate.mod, target="cuda -arch=sm_80")
        ptx = rt.get_source("ptx")
        assert ".entry main_kernel0" in ptx and "bar.sync" in ptx
        assert "__shared__" in rt.get_source("cuda")
    assert redrawn_only(space.rejections)


def padded(space, func, candidate, reads):
    """The candidate with every shared copy sampled to be padded (pad_shared_tiles) for vector
    reads (1) or scalar reads (2)."""
    json_obj = with_sampled_annotation(candidate.decisions.as_json(), "kiln.pad_shared", reads)
    sch = kiln.tir.Schedule(func)
    kiln.tir.Trace.apply_json_to_schedule(json_obj, sch)
    return space.replay(candidate.sketch, sch.trace)


@pytest.mark.parametrize("name", ["gemm_128", "conv2d"])
def test_padded_shared_tiles_compute_the_product(name):
    """Copies sampled to be padded get the stride the bank model picks for a warp of 32 (an
    OpenCL target told its warp) and still compute the product on the OpenCL device; their
    CUDA C compiles with NVRTC."""
    skip_unless(opencl_missing())
    func, expected = TILED[name]()
    space = SpaceGenerator(func, "opencl -thread_warp_size=32")
    aligned = {1: 0, 2: 0}
    for seed, candidate in enumerate(first_candidates(space, 8)):
        for reads in (1, 2):
            variant = padded(space, func, candidate, reads)
            assert variant is not None, space.rejections
            if "sch.storage_align(" not in str(variant.trace) or aligned[reads] == 2:
                continue
            aligned[reads] += 1
            run_candidate(variant, func, expected, seed=seed)
            if not nvrtc_missing():
                kiln.build(variant.mod, target="cuda -arch=sm_80")
    assert aligned[1] >= 1 and aligned[2] >= 1, aligned
    assert redrawn_only(space.rejections)


def test_a_padding_for_vector_reads_keeps_nvrtcs_vector_loads():
    """NVRTC reads the shared tiles of tiled GEMMs mostly with ld.shared.v4 and v2. Over the
    first five candidates whose two paddings differ: padded for vector reads (rows 16-byte
    aligned) they take about the load instructions of the compact tiles; padded for scalar
    reads (a stride not a multiple of 4), more: reads that no longer merge."""
    skip_unless(nvrtc_missing())
    import re
    func, _ = TILED["gemm_128"]()
    space = SpaceGenerator(func, "cuda -arch=sm_80")

    def loads(candidate):
        ptx = kiln.build(candidate.mod, target="cuda -arch=sm_80").get_source("ptx")
        return len(re.findall(r"ld\.shared\.", ptx))
    totals = np.zeros(3)
    checked = 0
    for seed in range(60):
        candidate = space.sample(0, seed=seed)
        if candidate is None:
            continue
        variants = [padded(space, func, candidate, r) for r in (0, 1, 2)]
        aligns = [re.findall(r"storage_align\(.*\)", str(v.trace)) for v in variants]
        if not aligns[1] or aligns[1] == aligns[2]:
            continue
        totals += [loads(v) for v in variants]
        checked += 1
        if checked == 5:
            break
    assert checked == 5
    compact, vector, scalar = totals
    assert vector <= 1.1 * compact and scalar > vector


def test_tiles_keep_the_threads_of_a_warp_and_the_limit():
    """On a CUDA target (warp of 32, here without a device, so the default limits): every
    candidate runs 32 to 128 threads per block; draws outside are counted and drawn again."""
    func, _ = matmul(128, 128, 128)
    space = SpaceGenerator(func, "cuda -arch=sm_80 -max_threads_per_block=128")
    for candidate in first_candidates(space, 4):
        lowered = kiln.tir.lower(candidate.mod, target="cuda -arch=sm_80")
        threads = lowered["main_kernel0"].attrs["kiln.launch.threadIdx.x"]
        assert 32 <= int(threads) <= 128
    assert space.rejections.get("sample: GpuThreadExtentError", 0) > 0
    assert redrawn_only(space.rejections)


def test_mutated_tiles_still_compute_the_product():
    skip_unless(opencl_missing())
    func, expected = matmul(64, 48, 32)
    space = SpaceGenerator(func, "opencl")
    (parent,) = first_candidates(space, 1)
    seen = {parent.hash}
    for seed in range(8):
        mutated = space.mutate(parent.decisions, seed=seed)
        if mutated is None:
            continue
        child = space.replay(0, mutated)
        assert child is not None, space.rejections
        if child.hash not in seen and len(seen) < 3:
            seen.add(child.hash)
            run_candidate(child, func, expected, seed=seed)
    assert len(seen) >= 2


def test_candidates_that_prefetch_their_tiles_compute_the_product():
    """The tilings sample whether the next step's tiles are loaded into registers during this
    one (kiln.prefetch_shared on the loop of the steps): both kinds of candidates come up and
    compute the product."""
    skip_unless(opencl_missing())
    func, expected = matmul(64, 48, 32)
    space = SpaceGenerator(func, "opencl")
    kinds = {}
    for candidate in first_candidates(space, 8):
        text = kiln.tir.lower(candidate.mod, target="opencl")["main_kernel0"].script()
        kinds.setdefault("_prefetch" in text, candidate)
    assert set(kinds) == {False, True}
    for seed, candidate in enumerate(kinds.values()):
        run_candidate(candidate, func, expected, seed=seed)
