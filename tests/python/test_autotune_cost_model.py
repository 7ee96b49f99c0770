"""Program features, the analytical prior and the cost model from Python: features of every
workload and of random schedules, the direction of a few features, the prior's ranking, the
learned model on synthetic data, save/load, and the errors of each entry point."""
import math
import random

import numpy as np
import pytest

import kiln
from kiln import autotune, te, tir, topi

from schedule_helpers import WORKLOADS, matmul
from test_schedule_fuzz import Fuzzer

TARGET = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell"  # AVX2, FMA, 16 vector registers


def feature(values, name):
    return float(values[autotune.feature_names().index(name)])


def scheduled_matmul(n=128, tile=(4, 16), vectorize=True, parallel=True):
    """A matmul tiled as i_0, j_0, k, i_1, j_1 with a local accumulator tile, lowered."""
    sch = tir.Schedule(matmul(n, n, n))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, tile[0]])
    j0, j1 = sch.split(j, [None, tile[1]])
    sch.reorder(i0, j0, k, i1, j1)
    copy = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(copy, j0)
    sch.decompose_reduction(block, k)
    sch.unroll(i1)
    if vectorize:
        sch.vectorize(j1)
    if parallel:
        sch.parallel(i0)
    return tir.lower(sch.mod["main"])


# --- Features ---------------------------------------------------------------------------------

def test_feature_vector_has_the_documented_length_and_names():
    names = autotune.feature_names()
    values = autotune.extract_features(tir.lower(matmul()), TARGET)
    assert isinstance(values, np.ndarray) and values.dtype == np.float32
    assert values.shape == (len(names),)
    assert len(set(names)) == len(names)
    prefixes = {name.split(".")[0] for name in names}
    assert {"program", "target", "arith", "vector", "loop", "tile", "memory", "access0",
            "alloc", "prior"} <= prefixes


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_workload_has_finite_features(name):
    lowered = tir.lower(WORKLOADS[name]())
    values = autotune.extract_features(lowered, TARGET)
    assert np.all(np.isfinite(values))
    prior = autotune.analytical_prior(lowered, TARGET)
    assert math.isfinite(prior) and prior >= 0


def test_random_schedules_have_finite_features():
    rng = random.Random(20240611)
    fuzzer = Fuzzer(rng)
    count = 0
    for _ in range(60):
        name = rng.choice(sorted(WORKLOADS))
        sch = tir.Schedule(WORKLOADS[name](), seed=rng.randrange(1 << 30))
        for _ in range(rng.randint(1, 6)):
            _, apply = fuzzer.step(sch)
            if apply is None:
                continue
            try:
                apply()
            except tir.ScheduleError:
                pass
        lowered = tir.lower(sch.mod["main"])
        values = autotune.extract_features(lowered, TARGET, num_cores=4)
        assert np.all(np.isfinite(values)), name
        estimate = autotune.estimate_prior(lowered, TARGET, num_cores=4)
        assert math.isfinite(estimate.throughput) and estimate.cycles > 0, name
        count += 1
    assert count == 60


def test_vectorizing_and_parallelizing_move_their_features():
    plain = autotune.extract_features(scheduled_matmul(vectorize=False, parallel=False), TARGET)
    tuned = autotune.extract_features(scheduled_matmul(), TARGET, num_cores=2)
    assert feature(plain, "program.vector_share") == 0
    assert feature(tuned, "program.vector_share") == 1
    assert feature(plain, "program.parallel_share") == 0
    assert feature(tuned, "program.parallel_share") == 1
    assert feature(tuned, "dominant.parallel_extent_per_core") == 16  # 32 rows of 4 on 2 cores


def test_a_target_object_and_its_string_agree():
    lowered = scheduled_matmul()
    from_string = autotune.extract_features(lowered, TARGET)
    from_object = autotune.extract_features(lowered, kiln.target.Target(TARGET))
    np.testing.assert_array_equal(from_string, from_object)


def test_features_are_deterministic():
    lowered = scheduled_matmul()
    np.testing.assert_array_equal(autotune.extract_features(lowered, TARGET),
                                  autotune.extract_features(lowered, TARGET))


def test_extract_features_errors():
    with pytest.raises(kiln.KilnValueError, match="expected a lowered function "
                                                  r"\(kiln.tir.lower\), found block 'root'"):
        autotune.extract_features(matmul(), TARGET)
    with pytest.raises(kiln.KilnTypeError, match="kiln.autotune.extract_features: lowered must "
                                                 "be a lowered PrimFunc"):
        autotune.extract_features(tir.Schedule(matmul()), TARGET)
    with pytest.raises(kiln.KilnTypeError, match="target must be a target string"):
        autotune.extract_features(tir.lower(matmul()), 3)
    with pytest.raises(kiln.KilnValueError, match="unknown target kind"):
        autotune.extract_features(tir.lower(matmul()), "rocm")
    with pytest.raises(kiln.KilnValueError, match="num_cores"):
        autotune.extract_features(tir.lower(matmul()), TARGET, num_cores=0)


def row_per_thread(pad, lanes):
    """A 32 x 32 x 32 matmul on one block of 32 threads, thread t computing row t of C: A's tile
    is staged in shared memory (copied with `lanes` per thread, its rows padded by `pad`), and
    each thread reads its own row of it, a word of a different row per thread."""
    A = te.placeholder((32, 32), "float32", name="A")
    B = te.placeholder((32, 32), "float32", name="B")
    r = te.reduce_axis((0, 32), name="k")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    i, j, k = sch.get_loops("C")
    io, ii = sch.split(i, factors=[1, 32])
    ko, ki = sch.split(k, factors=[1, 32])
    sch.reorder(io, ii, ko, ki, j)
    sch.bind(io, "blockIdx.x")
    sch.bind(ii, "threadIdx.x")
    copy = sch.cache_read("C", 0, "shared", consumer_blocks=["C"])
    sch.compute_at(copy, ko)
    fused = sch.fuse(*sch.get_loops(copy)[-2:])
    parts = sch.split(fused, factors=[None, 32, lanes])
    sch.bind(parts[1], "threadIdx.x")
    sch.vectorize(parts[2])
    if pad:
        sch.storage_align(copy, 0, axis=0, factor=32, offset=pad)
    return tir.lower(sch.mod["main"])


def test_gpu_features_count_the_bank_conflicts_of_shared_memory():
    names = autotune.feature_names()

    def gpu(lowered, target="cuda"):
        x = autotune.extract_features(lowered, target)
        return {n[4:]: float(v) for n, v in zip(names, x) if n.startswith("gpu.")}
    # Rows of 32 words: the 32 threads read one bank (32-way). A thread reads its word once a
    # step of k (the compiler hoists it out of the j loop, which does not change it): 32 reads
    # of 32 wavefronts and the copy's 32 stores of one, against 64 without conflicts.
    compact = gpu(row_per_thread(0, 1))
    assert compact["shared_bank_conflicts"] == pytest.approx((32 * 32 + 32) / 64, rel=1e-5)
    assert compact["log_shared_requests"] == pytest.approx(np.log2(1 + 64))
    assert compact["log_threads_per_block"] == pytest.approx(np.log2(33))
    assert compact["log_thread_blocks"] == pytest.approx(1.0)
    # Rows of 33 words: no conflict; of 36 (whole vectors of 4 for the copy): 4-way.
    assert gpu(row_per_thread(1, 1))["shared_bank_conflicts"] == pytest.approx(1.0)
    padded = gpu(row_per_thread(4, 4))
    assert padded["shared_bank_conflicts"] == pytest.approx((32 * 4 + 8 * 4) / (32 + 8 * 4))
    assert padded["log_shared_wavefronts"] < compact["log_shared_wavefronts"]
    # The same requests either way; a CPU target has no GPU features.
    assert gpu(row_per_thread(1, 1))["log_shared_requests"] == compact["log_shared_requests"]
    assert set(gpu(row_per_thread(0, 1), TARGET).values()) == {0.0}


def add_one(threads_along_rows, n=64):
    """B = A + 1 on n x n, a block per row (threads along it) or per column."""
    A = te.placeholder((n, n), "float32", name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops("B")
    sch.bind(i, "blockIdx.x" if threads_along_rows else "threadIdx.x")
    sch.bind(j, "threadIdx.x" if threads_along_rows else "blockIdx.x")
    return tir.lower(sch.mod["main"])


def test_gpu_features_count_the_sectors_of_global_memory():
    names = autotune.feature_names()

    def gpu(lowered):
        x = autotune.extract_features(lowered, "cuda")
        return {n[4:]: float(v) for n, v in zip(names, x) if n.startswith("gpu.")}
    # A warp's 32 floats of a row are 4 sectors of 32 bytes; of a column, 32 (rows of 256 bytes).
    rows, columns = gpu(add_one(True)), gpu(add_one(False))
    assert rows["global_sectors_over_fewest"] == pytest.approx(1.0)
    assert columns["global_sectors_over_fewest"] == pytest.approx(8.0)
    # Per call: 64 blocks x 2 warps x 2 requests (the load and the store), 4 or 32 sectors each.
    assert rows["log_global_requests"] == pytest.approx(np.log2(1 + 256))
    assert rows["log_global_sectors"] == pytest.approx(np.log2(1 + 256 * 4))
    assert columns["log_global_sectors"] == pytest.approx(np.log2(1 + 256 * 32))
    assert rows["shared_bank_conflicts"] == 0.0  # no shared memory


def gpu_features(lowered, target):
    """The gpu.* features of a lowered function by name (without the prefix)."""
    values = autotune.extract_features(lowered, target)
    return {n[4:]: float(v) for n, v in zip(autotune.feature_names(), values)
            if n.startswith("gpu.")}


def tiled_add(threads, per_thread, local_words=0):
    """B = A + 1 on 1024 x 1024 elements: `threads` threads per block, `per_thread`
    consecutive rows of a column each (the warp's threads along a row: coalesced), the
    element staged through a thread-local array of `local_words` floats when not 0."""
    A = te.placeholder((1024, 1024), "float32", name="A")
    B = te.compute((1024, 1024), lambda i, j: A[i, j] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops("B")
    jo, ji = sch.split(j, factors=[None, threads])
    io, ii = sch.split(i, factors=[None, per_thread])
    sch.reorder(io, jo, ji, ii)
    sch.bind(sch.fuse(io, jo), "blockIdx.x")
    sch.bind(ji, "threadIdx.x")
    if local_words:
        copy = sch.cache_read("B", 0, "local")
        sch.compute_at(copy, ji)
        sch.unroll(sch.get_loops(copy)[-1])
        sch.unroll(sch.get_loops("B")[-1])
        assert per_thread == local_words
    return tir.lower(sch.mod["main"])


def shared_rows(pad, rows=65536, pad_b=0):
    """C = A @ B for A of `rows` x 32 and B of 32 x 32, 32 rows per block of 32 threads: A's
    and B's tiles in shared memory (A's rows padded by `pad`, B's by `pad_b`), thread t
    accumulating row t of its block in 32 local words, reading its row of A's tile along the
    serial k loop (all threads a different row: bank conflicts unpadded) and B's tile (one word
    for all: a broadcast)."""
    A = te.placeholder((rows, 32), "float32", name="A")
    B = te.placeholder((32, 32), "float32", name="B")
    r = te.reduce_axis((0, 32), name="k")
    C = te.compute((rows, 32), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    i, j, k = sch.get_loops("C")
    io, ii = sch.split(i, factors=[None, 32])
    sch.reorder(io, ii, k, j)
    sch.bind(io, "blockIdx.x")
    sch.bind(ii, "threadIdx.x")
    sch.unroll(j)
    local = sch.cache_write("C", 0, "local")
    sch.reverse_compute_at(local, ii)
    for operand in (0, 1):
        copy = sch.cache_read("C", operand, "shared", consumer_blocks=["C"])
        sch.compute_at(copy, io)
        outer, threads = sch.split(sch.fuse(*sch.get_loops(copy)[-2:]), factors=[None, 32])
        sch.bind(threads, "threadIdx.x")
        if [pad, pad_b][operand]:
            sch.storage_align(copy, 0, axis=0, factor=32, offset=[pad, pad_b][operand])
    return tir.lower(sch.mod["main"])


def test_gpu_features_count_each_load_once_and_merge_neighbouring_reads():
    # Per block, unpadded: B's 32 neighbouring words (the same for every thread) are read as 8
    # reads of 16 bytes a step of k, and a thread's row of A once a step (not once per
    # unrolled j) along the serial k loop, which the compiler unrolls and reads 4 words at a
    # time: 32 * 8 + 32 / 4 requests, plus the copies' 32 + 32 stores; 2048 blocks. A 16-byte
    # read takes 4 wavefronts (a quarter warp each), 32 for A's (8 threads of a quarter reading
    # 8 rows in the same banks), a store 1: 32 * 8 * 4 + 8 * 32 + 64.
    compact = gpu_features(shared_rows(0), "cuda -arch=sm_80")
    assert compact["log_shared_requests"] == pytest.approx(np.log2(1 + 2048 * 328))
    assert compact["log_shared_wavefronts"] == pytest.approx(np.log2(1 + 2048 * 1344))
    # A's rows padded to 33 words: a row's start is not 16-byte aligned, so its reads stay
    # scalar (32 requests of 1 wavefront); and B's too: its 32 reads a step stay scalar.
    padded = gpu_features(shared_rows(1), "cuda -arch=sm_80")
    assert padded["log_shared_requests"] == pytest.approx(np.log2(1 + 2048 * (256 + 32 + 64)))
    assert padded["log_shared_wavefronts"] == pytest.approx(np.log2(1 + 2048 * (1024 + 32 + 64)))
    both = gpu_features(shared_rows(1, pad_b=1), "cuda -arch=sm_80")
    assert both["log_shared_requests"] == pytest.approx(np.log2(1 + 2048 * (1024 + 32 + 64)))
    # Rows of 36 words keep A's reads 16-byte aligned and put a quarter warp's 8 rows in
    # different banks: 8 reads of 4 wavefronts.
    vector = gpu_features(shared_rows(4), "cuda -arch=sm_80")
    assert vector["log_shared_requests"] == compact["log_shared_requests"]
    assert vector["log_shared_wavefronts"] == pytest.approx(np.log2(1 + 2048 * (1024 + 32 + 64)))


def test_gpu_prior_occupancy_and_registers():
    # 64 threads (2 warps) per block, 16 rows each: 1024 blocks over an A100's 108 SMs, 10 on
    # the busiest, all resident at once: 20 of its 64 warps.
    x = gpu_features(tiled_add(64, 16), "cuda -arch=sm_80")
    assert x["registers_per_thread"] == 32
    assert x["occupancy"] == pytest.approx(20 * 32 / 2048)
    assert x["sm_balance"] == pytest.approx(1024 / (10 * 108))
    assert x["log_kernels"] == pytest.approx(1.0)
    # A thread's 64-word local array takes 64 registers more; 1024 threads per block leave 64
    # registers to each (the kernel's __launch_bounds__): 32 spill, and the prior drops.
    fits = autotune.estimate_prior(tiled_add(64, 64, 64), "cuda -arch=sm_80")
    spills = autotune.estimate_prior(tiled_add(1024, 64, 64), "cuda -arch=sm_80")
    assert fits.accumulator_registers == spills.accumulator_registers == 64
    assert fits.spilled_registers == 0 and spills.spilled_registers == 32
    assert gpu_features(tiled_add(1024, 64, 64), "cuda -arch=sm_80")["registers_per_thread"] == 64
    assert spills.throughput < fits.throughput
    # A sum to one value in two kernels (blocks summing slices, then one block their sums):
    # two launches.
    data = te.placeholder((1 << 20,), "float32", name="A")
    r = te.reduce_axis((0, 1 << 20), name="k")
    total = te.compute((1,), lambda i: te.sum(data[r], axis=r), name="S")
    two = tir.lower(topi.default_schedule([data, total], "cuda -arch=sm_80").mod["main"])
    assert gpu_features(two, "cuda -arch=sm_80")["log_kernels"] == pytest.approx(np.log2(3))
    assert autotune.estimate_prior(two, "cuda -arch=sm_80").cycles > 2 * 4000
    # A convolution's padded input copied into shared memory under its consumer's threadIdx
    # loops: the copy's guard counts once per thread (the operations stay near the 2 * MACs of
    # the convolution: the guards add some; counted per consumer thread they were 85x that).
    image = te.placeholder((1, 16, 14, 14), "float32", name="I")
    weight = te.placeholder((16, 16, 3, 3), "float32", name="W")
    conv = topi.default_schedule([image, weight, topi.nn.conv2d_nchw(image, weight, 1, 1, 1)],
                                 "cuda -arch=sm_80")
    macs = 16 * 16 * 9 * 14 * 14
    operations = autotune.estimate_prior(tir.lower(conv.mod["main"]), "cuda -arch=sm_80").operations
    assert 2 * macs <= operations < 1.5 * 2 * macs
    # The architecture's numbers: an H100 has 132 SMs.
    h100 = gpu_features(tiled_add(64, 16), "cuda -arch=sm_90")
    assert h100["sm_balance"] == pytest.approx(1024 / (8 * 132))


def test_gpu_prior_ranks_coalescing_bank_conflicts_and_parallelism():
    for target in ["cuda -arch=sm_80", "cuda -arch=sm_90", "opencl"]:
        def prior(lowered):
            return autotune.estimate_prior(lowered, target)
        # Threads along rows (one sector per 8 threads) beat threads down columns.
        rows, columns = prior(add_one(True, 1024)), prior(add_one(False, 1024))
        assert isinstance(rows, autotune.PriorEstimate)
        assert rows.operations == columns.operations == 1024 * 1024
        assert rows.throughput > columns.throughput
        assert rows.memory_cycles < columns.memory_cycles
        # Rows padded to 36 words (A's vector reads without bank conflicts) beat compact rows
        # (8-way conflicts).
        assert prior(shared_rows(4)).throughput > 1.1 * prior(shared_rows(0)).throughput
        # Work spread over every SM (1024 blocks) beats the same work on 16 blocks.
        spread, few = prior(tiled_add(64, 16)), prior(tiled_add(64, 1024))
        assert spread.throughput > 4 * few.throughput
        assert spread.parallel_efficiency > 0.9 > 0.2 > few.parallel_efficiency
    # The GPU program on a CPU target gets the CPU's prior.
    assert autotune.estimate_prior(add_one(True, 1024), TARGET).throughput != rows.throughput


# --- The prior --------------------------------------------------------------------------------

def test_prior_ranks_a_tuned_matmul_above_the_naive_one():
    naive = autotune.estimate_prior(tir.lower(matmul(128, 128, 128)), TARGET, num_cores=2)
    tuned = autotune.estimate_prior(scheduled_matmul(), TARGET, num_cores=2)
    assert isinstance(tuned, autotune.PriorEstimate)
    assert tuned.throughput > 4 * naive.throughput
    assert tuned.operations == naive.operations == 2 * 128 ** 3
    assert tuned.accumulator_registers == 8 and tuned.spilled_registers == 0
    assert autotune.analytical_prior(scheduled_matmul(), TARGET, num_cores=2) == tuned.throughput


def test_prior_penalizes_a_spilling_register_tile():
    fits = autotune.estimate_prior(scheduled_matmul(tile=(4, 16)), TARGET, num_cores=2)
    spills = autotune.estimate_prior(scheduled_matmul(tile=(8, 64)), TARGET, num_cores=2)
    assert spills.spilled_registers > 0
    assert spills.throughput < fits.throughput


# --- The learned model ------------------------------------------------------------------------

def synthetic(count, seed, scale=1.0):
    """Rows whose time falls with feature 0 and rises with feature 1 (2-9 are noise)."""
    rng = np.random.RandomState(seed)
    rows = np.zeros((count, len(autotune.feature_names())), np.float32)
    rows[:, :10] = rng.rand(count, 10)
    return rows, scale * np.exp(2 * rows[:, 1] - 3 * rows[:, 0]) * 1e-3


def test_cost_model_learns_a_synthetic_ranking():
    model = autotune.CostModel()
    assert not model.trained and model.num_rows == 0
    rows, seconds = synthetic(600, 1)
    result = model.update(rows, seconds, group=0)
    assert isinstance(result, autotune.UpdateResult)
    assert result.trained and result.rows == 600 and math.isnan(result.holdout_recall)
    test_rows, test_seconds = synthetic(100, 2)
    scores = model.predict_model(test_rows)
    assert scores.shape == (100,)
    assert autotune.top_k_recall(scores, test_seconds, 10) >= 0.6
    more_rows, more_seconds = synthetic(64, 3)
    assert model.update(more_rows, more_seconds, group=0).holdout_recall >= 0.5
    assert model.num_group_rows(0) == 664


def test_predict_blends_with_the_prior():
    model = autotune.CostModel(half_weight_rows=64.0)
    rows, seconds = synthetic(6, 4)
    priors = [3.0, 1.0, 2.0, 6.0, 5.0, 4.0]
    np.testing.assert_array_equal(model.predict(rows, priors), [0.4, 0.0, 0.2, 1.0, 0.8, 0.6])
    np.testing.assert_array_equal(model.predict(rows), [0.5] * 6)
    assert model.predict_model(rows) is None
    model.update(rows, seconds, group=1)
    assert model.xgboost_weight(1) == 0  # fewer rows than min_group_rows
    more, more_seconds = synthetic(58, 5)
    model.update(more, more_seconds, group=1)
    assert model.xgboost_weight(1) == 0.5 and model.xgboost_weight(2) == 0
    blended = model.predict(rows, priors, group=1)
    assert blended.shape == (6,) and np.all((blended >= 0) & (blended <= 1))


def test_save_and_load_round_trip(tmp_path):
    model = autotune.CostModel(num_rounds=20, half_weight_rows=16.0)
    rows, seconds = synthetic(80, 6)
    seconds[3] = float("inf")  # a failed candidate
    model.update(rows, seconds, group=2)
    model.save(tmp_path / "model")
    loaded = autotune.CostModel().load(tmp_path / "model")
    assert loaded.num_rows == 80 and loaded.options["num_rounds"] == 20
    test_rows, _ = synthetic(30, 7)
    np.testing.assert_array_equal(loaded.predict_model(test_rows), model.predict_model(test_rows))
    priors = np.arange(30.0)
    np.testing.assert_array_equal(loaded.predict(test_rows, priors, group=2),
                                  model.predict(test_rows, priors, group=2))
    with pytest.raises(kiln.KilnValueError, match="no saved cost model there"):
        autotune.CostModel().load(tmp_path / "missing")


def test_cost_model_errors():
    model = autotune.CostModel()
    rows, seconds = synthetic(4, 8)
    with pytest.raises(kiln.KilnValueError, match="expected at least one measured row"):
        model.update(np.zeros((0, rows.shape[1]), np.float32), [], group=0)
    with pytest.raises(kiln.KilnValueError, match="found 4 rows and 3 times"):
        model.update(rows, seconds[:3], group=0)
    with pytest.raises(kiln.KilnValueError, match="time 1 must be positive seconds"):
        model.update(rows, [1e-3, float("nan"), 1e-3, 1e-3], group=0)
    with pytest.raises(kiln.KilnValueError, match="row 0 must have"):
        model.update(rows[:, :5], seconds, group=0)
    with pytest.raises(kiln.KilnTypeError, match="features must be a 2-D array"):
        model.update("rows", seconds, group=0)
    with pytest.raises(kiln.KilnTypeError, match="group must be an int"):
        model.update(rows, seconds, group="a")
    with pytest.raises(kiln.KilnValueError, match="one prior per row"):
        model.predict(rows, [1.0])
    assert model.num_rows == 0
    with pytest.raises(kiln.KilnTypeError, match="unknown option 'depth'"):
        autotune.CostModel(depth=3)
    with pytest.raises(kiln.KilnValueError, match="objective must be 'rank:pairwise' or"):
        autotune.CostModel(objective="reg:squarederror")


def test_top_k_recall():
    assert autotune.top_k_recall([0.9, 0.1, 0.5], [1e-3, 5e-3, 2e-3], 2) == 1.0
    assert autotune.CostModel.top_k_recall(np.array([1.0, 2.0]), np.array([1.0, 2.0]), 1) == 0.0
    with pytest.raises(kiln.KilnValueError, match=r"k must be in \[1, "):
        autotune.top_k_recall([1.0], [1.0], 0)
    with pytest.raises(kiln.KilnValueError, match="found 2 scores and 1 times"):
        autotune.top_k_recall([1.0, 2.0], [1.0], 1)
    with pytest.raises(kiln.KilnTypeError, match="scores must be a list or array of numbers"):
        autotune.top_k_recall("ab", [1.0], 1)


def test_unrolled_rows_of_a_window_cost_the_cache_traffic_of_the_loop():
    # B[y, x] = sum over c, r of A[c, y + r, x]: 8 image rows x 3 row taps unrolled are 24
    # loads of A at constant offsets, which repeat for each of the 64 channels; the estimated
    # cache traffic is that of the same nest with the rows left as loops (it was 10x lower
    # when the offsets' spread counted once).
    A = te.placeholder((64, 66, 64), name="A")
    c = te.reduce_axis((0, 64), name="c")
    r = te.reduce_axis((0, 3), name="r")
    B = te.compute((64, 64), lambda y, x: te.sum(A[c, y + r, x], axis=[c, r]), name="B")
    func = te.create_prim_func([A, B])
    estimates = []
    for unroll in (False, True):
        sch = tir.Schedule(func)
        y, x, rc, rr = sch.get_loops(sch.get_block("B"))
        yo, yi = sch.split(y, [None, 8])
        xo, xi = sch.split(x, [None, 8])
        sch.reorder(yo, xo, rc, rr, yi, xi)
        sch.vectorize(xi)
        if unroll:
            sch.unroll(yi)
            sch.unroll(rr)
        lowered = tir.lower(sch.mod)
        lowered = lowered["main"] if not hasattr(lowered, "body") else lowered
        estimates.append(autotune.estimate_prior(lowered, "llvm", 1).memory_cycles)
    assert estimates[1] == pytest.approx(estimates[0], rel=0.1)
