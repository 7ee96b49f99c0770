"""Random GPU schedules: the spatial loops of each kernel split at random and bound to blockIdx
and threadIdx (random thread counts), optionally an input staged in shared memory at the block
or reduction loop and fetched cooperatively by the block's threads, optionally a reduce loop
split over threadIdx.x (a cross-thread reduction), random compute_inline of element-wise
producers, and producers either computed inside their consumer's kernel (in local or shared
memory) or given their own kernel; some inner loops (a thread's serial part, the shared copy's
innermost part, the local write-back) are vectorized, with 2, 3 or 4 lanes (3 stays a loop),
some shared buffers are dynamic shared memory ("shared.dyn"), and some tiled kernels put
virtual threads (vthread.y/x, 2 or 3 each) between the thread blocks and the threads.
Every schedule must compute what the unscheduled function
computes on the reference interpreter, and then on OpenCL (PoCL on the CPU); some also compile
with NVRTC.

A schedule that kiln refuses by design (a ScheduleError, or a KilnValueError from GPU lowering
such as too many threads per block or a barrier in divergent code) is skipped; a wrong result,
an InternalError or any other exception fails. KILN_GPU_FUZZ=N runs N schedules (default 150);
KILN_GPU_FUZZ_SEED picks the seed.
"""
import os
import random
import traceback

import numpy as np
import pytest

import kiln
from kiln import te, tir

from gpu_helpers import nvrtc_missing, opencl_missing, skip_unless
from schedule_helpers import (batch_matmul, conv2d, depthwise_conv2d, elementwise_chain,
                              layer_norm, matmul, matmul_relu, random_args, softmax)
from test_schedule_fuzz import block_names

SCHEDULES = int(os.environ.get("KILN_GPU_FUZZ", "150"))
SEED = int(os.environ.get("KILN_GPU_FUZZ_SEED", "20261207"))
OPENCL = "opencl"

WORKLOADS = {
    "matmul": lambda: matmul(24, 20, 12),
    "matmul_relu": lambda: matmul_relu(16, 12, 8),
    "batch_matmul": batch_matmul,
    "conv2d": lambda: conv2d(1, 3, 6, 6, 4),
    "depthwise_conv2d": depthwise_conv2d,
    "softmax": lambda: softmax(6, 40),
    "layer_norm": lambda: layer_norm(5, 24),
    "elementwise_chain": elementwise_chain,
}

THREADS = [1, 2, 3, 4, 5, 8, 16, 32, 64]


class Skip(Exception):
    """The schedule is one kiln refuses by design."""


def iter_kinds(sch, block):
    return [iv.iter_type for iv in sch.get(block).iter_vars]


def split_loops(sch, block):
    """The block's loops (as create_prim_func made them: spatial first), as (spatial, reduce)."""
    loops = sch.get_loops(block)
    kinds = iter_kinds(sch, block)
    num_reduce = kinds.count("reduce")
    if num_reduce == 0:
        return loops, []
    return loops[:-num_reduce], loops[-num_reduce:]


class GpuFuzzer:
    """Draws the random choices of one schedule. With cover_thread_axes, a producer computed in
    shared memory inside a kernel is spread over every thread axis of the kernel; without it,
    the threads of an axis it does not bind leave it to one of them (guard_redundant_stores)."""

    def __init__(self, rng, sch, cover_thread_axes=True, extra_rng=None, vthread_rng=None):
        self.rng = rng
        self.sch = sch
        self.cover_thread_axes = cover_thread_axes
        self.threads = {}  # thread tag -> extent of the kernel being scheduled
        # Vectorization and dynamic shared memory draw from their own generator, so that the
        # other choices of a seed stay what they were without them; None uses neither. So do
        # virtual threads.
        self.extra_rng = extra_rng
        self.vthread_rng = vthread_rng

    def shared_scope(self):
        """"shared", or sometimes "shared.dyn" (dynamic shared memory)."""
        if self.extra_rng is not None and self.extra_rng.random() < 0.5:
            return "shared.dyn"
        return "shared"

    def maybe_vectorize(self, loop, chance=0.7):
        """Vectorizes loop (None: none; the draw is made all the same) with the chance."""
        if self.extra_rng is not None and self.extra_rng.random() < chance and loop is not None:
            self.sch.vectorize(loop)

    def vector_lanes(self):
        """2, 3 or 4 lanes for a shared copy's innermost part, or 1 for none."""
        if self.extra_rng is None or self.extra_rng.random() < 0.3:
            return 1
        return self.extra_rng.choice([2, 3, 4])

    def vthreads(self):
        """Virtual threads along one axis of a tiled kernel (1: none)."""
        if self.vthread_rng is None:
            return 1
        return self.vthread_rng.choice([1, 1, 2, 3])

    def count(self):
        """A random thread count; rarely over the OpenCL target's limit of 256 per block."""
        return self.rng.choice(THREADS + [128, 512] if self.rng.random() < 0.1 else THREADS)

    def bind_fused(self, block):
        """Fuses the spatial loops, splits them into [blocks, threads] (and sometimes a serial
        part per thread) and binds them; returns (block loop, thread loop)."""
        sch, rng = self.sch, self.rng
        spatial, reduce = split_loops(sch, block)
        fused = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
        tx = self.count()
        if rng.random() < 0.3:
            bx, txl, inner = sch.split(fused, factors=[None, tx, rng.choice([2, 3])])
            self.maybe_vectorize(inner)
        else:
            bx, txl = sch.split(fused, factors=[None, tx])
        sch.bind(bx, "blockIdx.x")
        sch.bind(txl, "threadIdx.x")
        self.threads = {"threadIdx.x": tx}
        return bx, txl

    def bind_tiled(self, block):
        """Splits the two outermost spatial loops into [blocks, threads, serial] and binds them
        (blockIdx.y/x, threadIdx.y/x); the remaining loops stay inside, serial. Stages an input
        in shared memory when asked; returns (block loop, thread loop)."""
        sch, rng = self.sch, self.rng
        spatial, reduce = split_loops(sch, block)
        if len(spatial) < 2:
            return self.bind_fused(block)
        ty, tx = self.count(), self.count()
        si, sj = rng.choice([1, 1, 2, 3]), rng.choice([1, 1, 2])
        vi, vj = self.vthreads(), self.vthreads()
        i_parts = sch.split(spatial[0], factors=[None] + ([vi] if vi > 1 else []) + [ty, si])
        j_parts = sch.split(spatial[1], factors=[None] + ([vj] if vj > 1 else []) + [tx, sj])
        (bi, tyl, ii), (bj, txl, ji) = [(p[0], p[-2], p[-1]) for p in (i_parts, j_parts)]
        virtual = [(p[1], tag) for p, tag in ((i_parts, "vthread.y"), (j_parts, "vthread.x"))
                   if len(p) == 4]
        inner = [ii, ji] + spatial[2:]
        reduce_outer = []
        if reduce and rng.random() < 0.7:
            ko, ki = sch.split(reduce[0], factors=[None, rng.choice([2, 3, 4, 8])])
            reduce_outer, reduce = [ko], [ki] + reduce[1:]
        sch.reorder(bi, bj, *[v for v, _ in virtual], tyl, txl, *reduce_outer, *reduce, *inner)
        sch.bind(bi, "blockIdx.y")
        sch.bind(bj, "blockIdx.x")
        for loop, tag in virtual:
            sch.bind(loop, tag)
        sch.bind(tyl, "threadIdx.y")
        sch.bind(txl, "threadIdx.x")
        self.threads = {"threadIdx.y": ty, "threadIdx.x": tx}
        if sj > 1:
            self.maybe_vectorize(ji)
        if rng.random() < 0.5:
            where = reduce_outer[0] if reduce_outer and rng.random() < 0.7 else bj
            self.stage_in_shared(block, where)
        if rng.random() < 0.3:
            local = sch.cache_write(block, 0, "local")
            sch.reverse_compute_at(local, txl)
            # A write-back of one element per thread has no loop of its own: its last loop is
            # the thread loop, which stays one.
            loops = sch.get_loops(local)
            own = len(loops) > len(self.ancestors(txl))
            self.maybe_vectorize(loops[-1] if own else None)
        return bj, txl

    def stage_in_shared(self, block, loop):
        """cache_read of a random input into "shared" at `loop`, fetched by the block's threads
        (the copy's loops fused and split over the kernel's thread extents)."""
        sch, rng = self.sch, self.rng
        num_inputs = len(sch.get(block).reads)
        shared = sch.cache_read(block, rng.randrange(num_inputs), self.shared_scope())
        sch.compute_at(shared, loop)
        copy = sch.get_loops(shared)[len(self.ancestors(loop)):]
        if not copy:  # one element: every thread of the block copies it (under guards)
            return
        fused = sch.fuse(*copy) if len(copy) > 1 else copy[0]
        tags = sorted(self.threads, reverse=True)  # threadIdx.y before threadIdx.x
        lanes = self.vector_lanes()
        factors = [None] + [self.threads[t] for t in tags] + ([lanes] if lanes > 1 else [])
        parts = sch.split(fused, factors=factors)
        for tag, part in zip(tags, parts[1:]):
            sch.bind(part, tag)
        if lanes > 1:
            sch.vectorize(parts[-1])

    def ancestors(self, loop):
        """`loop` and the loops enclosing it, outermost first."""
        sch = self.sch
        target = sch.get(loop)
        for name in block_names(sch.mod["main"]):
            loops = sch.get_loops(sch.get_block(name))
            for index, l in enumerate(loops):
                if sch.get(l).same_as(target):
                    return loops[:index + 1]
        return [loop]

    def bind_cross_thread(self, block):
        """Spatial loops over blockIdx.x (and sometimes threadIdx.y), the reduce loops fused and
        split over threadIdx.x: a cross-thread reduction."""
        sch, rng = self.sch, self.rng
        spatial, reduce = split_loops(sch, block)
        fused = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
        self.threads = {}
        if rng.random() < 0.4:
            ty = rng.choice([2, 3, 4])
            bx, tyl = sch.split(fused, factors=[None, ty])
            sch.bind(tyl, "threadIdx.y")
            self.threads["threadIdx.y"] = ty
        else:
            bx, tyl = fused, None
        sch.bind(bx, "blockIdx.x")
        r = sch.fuse(*reduce) if len(reduce) > 1 else reduce[0]
        tx = self.count()
        if rng.random() < 0.6:
            rx, _ = sch.split(r, factors=[tx, None])
        else:
            ro, rx = sch.split(r, factors=[None, tx])
            sch.reorder(rx, ro)
        sch.bind(rx, "threadIdx.x")
        self.threads["threadIdx.x"] = tx
        return bx, tyl or bx

    def schedule_kernel(self, block):
        """Binds a block's loops in one of three ways; returns (block loop, thread loop)."""
        kinds = iter_kinds(self.sch, block)
        choices = ["fused", "tiled"] + (["cross_thread"] * 2 if "reduce" in kinds else [])
        how = self.rng.choice(choices)
        if how == "fused":
            return self.bind_fused(block)
        if how == "tiled":
            return self.bind_tiled(block)
        return self.bind_cross_thread(block)

    def schedule_producer(self, block, consumer_loops):
        """A producer the consumer's kernel did not absorb: computed at the consumer's thread
        loop in local memory, at its block loop in shared memory (its loops over the threads),
        or in a kernel of its own."""
        sch, rng = self.sch, self.rng
        block_loop, thread_loop = consumer_loops
        how = rng.choice(["local", "shared", "own"])
        if how == "local":
            sch.compute_at(block, thread_loop)
            sch.set_scope(block, 0, "local")
            return
        if how == "shared":
            sch.compute_at(block, block_loop)
            sch.set_scope(block, 0, self.shared_scope())
            spatial, reduce = split_loops(sch, block)
            outer = len(self.ancestors(block_loop))
            spatial = spatial[outer:]
            fused = None
            if spatial:
                fused = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
            if self.cover_thread_axes and "threadIdx.y" in self.threads:
                if fused is None:
                    raise Skip("uncovered: no spatial loop for threadIdx.y")
                _, fused = sch.split(fused, factors=[None, self.threads["threadIdx.y"]])
                sch.bind(fused, "threadIdx.y")
                fused = None
            if reduce and "threadIdx.x" in self.threads and rng.random() < 0.7:
                r = sch.fuse(*reduce) if len(reduce) > 1 else reduce[0]
                rx, _ = sch.split(r, factors=[self.threads["threadIdx.x"], None])
                sch.bind(rx, "threadIdx.x")
            elif fused is not None and "threadIdx.x" in self.threads:
                _, tx = sch.split(fused, factors=[None, self.threads["threadIdx.x"]])
                sch.bind(tx, "threadIdx.x")
            elif self.cover_thread_axes and reduce:
                raise Skip("uncovered: a reduction in shared memory not over threadIdx.x")
            return
        saved = self.threads
        self.schedule_kernel(block)
        self.threads = saved


def random_gpu_schedule(rng, func, cover_thread_axes=True, extra_rng=None, vthread_rng=None):
    """Applies a random GPU schedule to func; raises Skip for a schedule kiln refuses."""
    sch = tir.Schedule(func, seed=rng.randrange(1 << 30))
    fuzzer = GpuFuzzer(rng, sch, cover_thread_axes, extra_rng, vthread_rng)
    try:
        names = block_names(func)
        for name in names[:-1]:
            if "reduce" not in iter_kinds(sch, sch.get_block(name)) and rng.random() < 0.6:
                sch.compute_inline(sch.get_block(name))
        consumer_loops = fuzzer.schedule_kernel(sch.get_block(names[-1]))
        for name in reversed(block_names(sch.mod["main"])[:-1]):
            if name.endswith("_local"):
                continue
            fuzzer.schedule_producer(sch.get_block(name), consumer_loops)
    except tir.ScheduleError as error:
        raise Skip(f"ScheduleError: {type(error).__name__}") from error
    return sch


def build(mod, target):
    try:
        return kiln.build(mod, target=target)
    except kiln.KilnValueError as error:  # GPU lowering refusing the schedule
        raise Skip(f"KilnValueError: {str(error).splitlines()[0][:60]}") from error


def run_schedule(seed, references, stats, nvrtc, cover_thread_axes=True, extras=True):
    rng = random.Random(seed)
    extra_rng = random.Random(seed + 1) if extras else None
    vthread_rng = random.Random(seed + 2) if extras else None
    name = rng.choice(sorted(WORKLOADS))
    func, expected = references[name]
    sch = None
    try:
        sch = random_gpu_schedule(rng, func, cover_thread_axes, extra_rng, vthread_rng)
        actual = random_args(func, 0)
        tir.interpret(sch.mod["main"], *actual)
        for e, a in zip(expected, actual):
            np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)
        stats["interpreter"] += 1
        rt = build(sch.mod, OPENCL)
        arrays = [kiln.nd.array(a, device=kiln.opencl(0)) for a in random_args(func, 0)]
        rt["main"](*arrays)
        for e, a in zip(expected, arrays):
            np.testing.assert_allclose(a.numpy(), e, rtol=1e-4, atol=1e-5)
        stats["opencl"] += 1
        if "sch.vectorize" in sch.trace.as_python():
            stats["vectorized"] += 1
        if "shared.dyn" in sch.trace.as_python():
            stats["dynamic_shared"] += 1
        if "vthread" in sch.trace.as_python():
            stats["vthread"] += 1
        if nvrtc and seed % 5 == 0:
            rt = build(sch.mod, "cuda -arch=sm_80")
            assert ".entry main_kernel0" in rt.get_source("ptx")
            stats["nvrtc"] += 1
    except Skip as reason:
        key = str(reason).split(":")[0]
        stats[key] = stats.get(key, 0) + 1
    except Exception as error:
        trace = sch.trace.as_python() if sch is not None else "(no schedule)"
        raise AssertionError(f"workload {name}, seed {seed}, schedule:\n{trace}") from error


def reference_results():
    references = {}
    for name, make in WORKLOADS.items():
        func = make()
        args = random_args(func, 0)
        tir.interpret(func, *args)
        references[name] = (func, args)
    return references


def test_random_gpu_schedules():
    skip_unless(opencl_missing())
    nvrtc = not nvrtc_missing()
    references = reference_results()
    stats = {"interpreter": 0, "opencl": 0, "nvrtc": 0, "vectorized": 0, "dynamic_shared": 0,
             "vthread": 0}
    rng = random.Random(SEED)
    for index in range(SCHEDULES):
        seed = rng.randrange(1 << 40)
        try:
            run_schedule(seed, references, stats, nvrtc, cover_thread_axes=index % 2 == 0)
        except Exception:  # noqa: BLE001 - report the reproducer, then fail
            pytest.fail(f"schedule {index} (seed {seed}, fuzz seed {SEED}) failed:\n"
                        f"{traceback.format_exc()}")
    print(f"\n{SCHEDULES} schedules: {stats}")
    assert stats["opencl"] > SCHEDULES // 3  # the fuzzer must mostly produce valid schedules
    assert stats["vectorized"] > SCHEDULES // 10
    assert stats["dynamic_shared"] > SCHEDULES // 30
    assert stats["vthread"] > SCHEDULES // 30


def test_unbound_thread_axis_reduction_in_shared():
    """The fuzzer's first find (softmax: row_sum in shared memory, its loops bound to
    threadIdx.x but not to the kernel's threadIdx.y of extent 3): every y thread ran the sum
    until guard_redundant_stores gave it to one."""
    skip_unless(opencl_missing())
    stats = {"interpreter": 0, "opencl": 0, "nvrtc": 0}
    run_schedule(728801816859, reference_results(), stats, nvrtc=False, cover_thread_axes=False,
                 extras=False)


def test_unbound_thread_axis_reduction_minimal():
    """The same case, minimal: the row sum S at the block loop in shared memory, no loop of it
    bound to threadIdx.x; one thread computes it, the 8 threads read it after a barrier."""
    skip_unless(opencl_missing())
    n, m = 4, 8
    A = te.placeholder((n, m), "float32", name="A")
    k = te.reduce_axis((0, m), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="S")
    B = te.compute((n, m), lambda i, j: A[i, j] / S[i], name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops("B")
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    sch.compute_at(sch.get_block("S"), i)
    sch.set_scope(sch.get_block("S"), 0, "shared")
    a = np.random.default_rng(0).uniform(1, 2, (n, m)).astype("float32")
    expected = a / a.sum(axis=1, keepdims=True)
    interpreted = np.zeros_like(a)
    tir.interpret(sch.mod["main"], a, interpreted)
    np.testing.assert_allclose(interpreted, expected, rtol=1e-5)
    rt = kiln.build(sch.mod, target="opencl")
    x = kiln.nd.array(a, device=kiln.opencl(0))
    y = kiln.nd.array(np.zeros_like(a), device=kiln.opencl(0))
    rt(x, y)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5)  # 1/8 of it
