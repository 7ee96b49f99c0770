"""kiln's main demo: define a few operators in the tensor-expression language, print their
TensorIR, run them on the reference interpreter and compare with NumPy; then schedule a matmul,
compile it for this CPU with LLVM, and run it against NumPy."""
import time

import numpy as np

import kiln
from kiln import te, tir
from kiln.target import Target, gemm_blocking


def matmul(m, n, k):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def softmax(rows, cols):
    X = te.placeholder((rows, cols), "float32", name="X")
    k1 = te.reduce_axis((0, cols), name="k1")
    row_max = te.compute((rows,), lambda i: te.max(X[i, k1], axis=k1), name="row_max")
    e = te.compute((rows, cols), lambda i, j: te.exp(X[i, j] - row_max[i]), name="exp")
    k2 = te.reduce_axis((0, cols), name="k2")
    total = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="total")
    Y = te.compute((rows, cols), lambda i, j: e[i, j] / total[i], name="Y")
    return te.create_prim_func([X, Y])


def rms_norm(rows, cols, eps=1e-6):
    X = te.placeholder((rows, cols), "float32", name="X")
    W = te.placeholder((cols,), "float32", name="W")
    k = te.reduce_axis((0, cols), name="k")
    sq = te.compute((rows,), lambda i: te.sum(X[i, k] * X[i, k], axis=k), name="sum_sq")
    Y = te.compute((rows, cols),
                   lambda i, j: X[i, j] * te.rsqrt(sq[i] / cols + eps) * W[j], name="Y")
    return te.create_prim_func([X, W, Y])


def main():
    rng = np.random.default_rng(0)

    func = matmul(32, 24, 16)
    print(func)
    a = rng.standard_normal((32, 16), dtype=np.float32)
    b = rng.standard_normal((16, 24), dtype=np.float32)
    c = np.zeros((32, 24), np.float32)
    tir.interpret(func, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    print("matmul: matches NumPy\n")

    func = softmax(8, 50)
    print(func)
    x = rng.standard_normal((8, 50), dtype=np.float32)
    y = np.zeros_like(x)
    tir.interpret(func, x, y)
    ref = np.exp(x - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    print("softmax: matches NumPy\n")

    func = rms_norm(4, 64)
    print(func)
    x = rng.standard_normal((4, 64), dtype=np.float32)
    w = rng.standard_normal(64, dtype=np.float32)
    y = np.zeros_like(x)
    tir.interpret(func, x, w, y)
    ref = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    print("rms_norm: matches NumPy\n")

    compiled_matmul(rng)
    print("\ndemo finished: every result matches NumPy")


def compiled_matmul(rng, n=512):
    """A matmul scheduled for this CPU and compiled with LLVM, blocked for the target by
    gemm_blocking: MR x NR register tiles whose accumulators fit the vector registers (e.g.
    6 x 16 with AVX2, 6 x 64 with AVX-512), groups of NR-column strips of B sized for the L2
    cache, B packed into strips, parallel."""
    target = Target("llvm")
    mr, nr, panels = gemm_blocking(target, "float32", n=n, k=n)
    print(f"register tile for {target.cpu}: {mr} x {nr} ({target.num_vector_registers} vector "
          f"registers of {target.vector_lanes('float32')} float32 lanes)")
    sch = tir.Schedule(matmul(n, n, n))
    block = sch.get_block("C")
    i, j, r = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, mr])
    jo, jp, ji = sch.split(j, factors=[None, panels, nr])
    sch.reorder(jo, io, jp, r, ii, ji)
    sch.vectorize(ji)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, jp)
    sch.vectorize(sch.get_loops(local)[-1])
    packed = sch.cache_read(block, 1, "global")
    sch.transform_layout(packed, ("write", 0), lambda kx, nx: [nx // nr, kx, nx % nr])
    pack_k, pack_n = sch.get_loops(packed)
    _, pack_lanes = sch.split(pack_n, factors=[None, target.vector_lanes("float32")])
    sch.vectorize(pack_lanes)
    sch.parallel(pack_k)
    sch.unroll(ii)
    sch.decompose_reduction(block, r)
    sch.parallel(jo)
    print(sch.mod["main"])
    rt = kiln.build(sch.mod, target=target)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    rt(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    nd = [kiln.nd.array(x) for x in (a, b, c)]
    seconds = rt.time_evaluator(rt.entry_name, kiln.cpu(0), number=3, repeat=5)(*nd).median
    a @ b  # warm-up: OpenBLAS starts its threads on the first call
    start = time.perf_counter()
    for _ in range(5):
        a @ b
    numpy_seconds = (time.perf_counter() - start) / 5
    flops = 2 * n ** 3
    print(f"compiled matmul {n}x{n}x{n} ({rt.target}): matches NumPy; "
          f"{flops / seconds / 1e9:.1f} GFLOP/s, NumPy {flops / numpy_seconds / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
