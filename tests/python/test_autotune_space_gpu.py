"""The tuner's GPU design space: candidates of the rules auto_bind and cross_thread_reduction,
sampled and mutated, pass the GPU verifier and compute what NumPy computes when built for OpenCL
and run on an OpenCL device (PoCL on a CPU here), sums to one value among them (an argmax to one
value gets the same sketches, its threads combining (index, value) pairs); a candidate the
target cannot run is refused with a counted reason. Tests that run kernels skip without an
OpenCL device."""
import numpy as np
import pytest

import kiln
from kiln import te, topi
from kiln.autotune import SpaceGenerator

from gpu_helpers import opencl_missing, skip_unless


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
    # each of its two reductions. A matmul has more outputs than steps: one output per thread.
    assert counts == {"add_then_sine": 1, "row_sum": 2, "softmax": 4, "matmul": 1}
    text = SpaceGenerator(row_sum()[0], "opencl").sketches[1].as_python()
    assert 'thread_axis="threadIdx.x"' in text and 'thread_axis="blockIdx.x"' in text


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_sketch_samples_candidates_that_compute_the_function(name):
    skip_unless(opencl_missing())
    func, expected = WORKLOADS[name]()
    space = SpaceGenerator(func, "opencl")
    for sketch in range(len(space.sketches)):
        candidate = space.sample(sketch, seed=sketch + 1)
        assert candidate is not None, space.rejections
        run_candidate(candidate, func, expected, seed=sketch)
    assert space.rejections == {}


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
