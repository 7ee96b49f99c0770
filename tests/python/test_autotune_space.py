"""The tuner's design space: sketches from the schedule rules, random candidates that compute
what the function computes (checked against NumPy after building them), replay, mutation and the
neighbours of the local search."""
import platform
import re
import warnings

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi
from kiln.autotune import SpaceGenerator
from kiln.error import VectorizeFallbackWarning

HASWELL = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell"  # 8 float32 lanes, whatever the host


def matmul(m, n, k, dtype="float32"):
    A = te.placeholder((m, k), dtype, name="A")
    B = te.placeholder((k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def padded_conv(h=8, w=8, ci=4, co=8):
    X = te.placeholder((1, ci, h, w), "float32", name="X")
    W = te.placeholder((co, ci, 3, 3), "float32", name="W")
    pad = te.compute((1, ci, h + 2, w + 2), lambda b, c, y, x: te.if_then_else(
        te.all(y >= 1, y < h + 1, x >= 1, x < w + 1), X[b, c, y - 1, x - 1], 0.0), name="pad")
    rc, ry, rx = (te.reduce_axis((0, e), name=n) for e, n in ((ci, "rc"), (3, "ry"), (3, "rx")))
    out = te.compute((1, co, h, w), lambda b, f, y, x: te.sum(
        pad[b, rc, y + ry, x + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    return te.create_prim_func([X, W, out])


def reference(func, args):
    expected = [a.copy() for a in args]
    tir.interpret(func, *expected)
    return expected


def random_args(func, seed=0):
    rng = np.random.default_rng(seed)
    args = []
    for param in func.params:
        buffer = func.buffer_map[param]
        shape = [int(d) for d in buffer.shape]
        args.append(rng.uniform(-1, 1, size=shape).astype(buffer.dtype))
    return args


def test_a_matmul_has_two_tiled_sketches():
    # SSRSRS, and SSRRS whose accumulator tile is the register tile: i and j are split in four
    # levels (their innermost drawn from the register tiles) or in three.
    space = SpaceGenerator(matmul(64, 64, 32), "llvm")
    assert len(space.sketches) == 2
    for sketch, spatial_levels in zip(space.sketches, (4, 3)):
        text = sketch.as_python()
        assert "sample_perfect_tile" in text and "sample_categorical" in text
        assert 'cache_write(block=b0, storage_scope="local"' in text
        assert "kiln.unroll_max_step" in text
        # i and j: their outer part in three levels or two (k is in two in both).
        assert text.count("max_innermost_factor=16, n=3") == (2 if spatial_levels == 4 else 0)
        assert text.count("max_innermost_factor=16, n=2") == (1 if spatial_levels == 4 else 3)


@pytest.mark.parametrize("seed", range(4))
def test_register_resident_candidates_compute_the_function(seed):
    func = matmul(64, 48, 32)
    space = SpaceGenerator(func, "llvm")
    candidate = space.sample(1, seed)
    assert candidate is not None, space.rejections
    args = random_args(func, seed)
    expected = reference(func, args)
    kiln.build(candidate.mod)(*args)
    np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)
    # The accumulator tile is the register tile: MR x NR elements once lowered.
    decisions = [i["decision"] for i in candidate.decisions.as_json()["instructions"]
                 if i["kind"] == "sample_categorical"]
    lowered = str(tir.lower(candidate.mod))
    allocated = [int(x) for x in re.findall(r'T\.allocate\(\((\d+),\), "float32", scope="local"',
                                            lowered)]
    assert allocated, lowered
    assert allocated[0] <= 14 * 32, (allocated, decisions)


@pytest.mark.parametrize("seed", range(6))
def test_random_candidates_compute_the_function(seed):
    func = matmul(64, 48, 32)
    space = SpaceGenerator(func, "llvm")
    candidate = space.sample(0, seed)
    assert candidate is not None, space.rejections
    args = random_args(func, seed)
    expected = reference(func, args)
    kiln.build(candidate.mod)(*args)
    np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sketch", [0, 1])
def test_both_operands_of_a_matmul_can_be_packed(sketch):
    # B is packed along the register tile's columns ([j // NR, k, j % NR]) and A along its rows
    # ([i // MR, k, i % MR]); candidates with either, both or neither compute the matmul.
    func = matmul(64, 48, 32)
    space = SpaceGenerator(func, "llvm")
    seen = set()
    for seed in range(16):
        candidate = space.sample(sketch, seed)
        assert candidate is not None, space.rejections
        text = candidate.trace.as_python()
        rows = re.search(r'index_map="lambda d0, d1: \[d0 // (\d+), d1, d0 % (\d+)\]"', text)
        columns = re.search(r'index_map="lambda d0, d1: \[d1 // (\d+), d0, d1 % (\d+)\]"', text)
        seen.add((rows is not None, columns is not None))
        if rows:
            assert rows.group(1) == rows.group(2)  # MR (6 does not divide 64: padded)
        args = random_args(func, seed)
        expected = reference(func, args)
        kiln.build(candidate.mod)(*args)
        np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)
    assert {rows for rows, _ in seen} == {True, False}, seen  # a decision, drawn both ways


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="runs code built for haswell, an x86-64 CPU model")
def test_a_register_tile_that_does_not_divide_the_rows_packs_them_padded():
    # 62 rows: the 6-row tile of AVX2's registers (the most rows that fit) leaves a partial last
    # tile; A packed along those rows gets a padded last slice, and the candidates compute the
    # matmul.
    func = matmul(62, 48, 32)
    space = SpaceGenerator(func, "llvm -mcpu=haswell")
    padded = 0
    for sketch in (0, 1):
        for seed in range(24):
            candidate = space.sample(sketch, seed)
            if candidate is None:
                continue
            text = candidate.trace.as_python()
            rows = re.search(r'index_map="lambda d0, d1: \[d0 // (\d+), d1, d0 % \1\]"', text)
            if rows is None or 62 % int(rows.group(1)) == 0:
                continue
            padded += 1
            args = random_args(func, seed)
            expected = reference(func, args)
            kiln.build(candidate.mod, target="llvm -mcpu=haswell")(*args)
            np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)
    assert padded > 0


def check_vectorized(func, candidate, seed, what="", out=2):
    """Builds the candidate for Haswell with every loop it vectorizes vector code (a fallback is
    an error) and checks that it computes `func` (its result the array at `out`: the third of a
    product). The lowered candidate runs on the interpreter too, which checks every access
    against its buffer's bounds (a local tile's included, where compiled code would only go
    wrong when LLVM exploits the overrun)."""
    args = random_args(func, seed)
    expected = reference(func, args)
    lowered = [a.copy() for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("error", VectorizeFallbackWarning)
        rt = kiln.build(candidate.mod, target=HASWELL)
        tir.interpret(tir.lower(candidate.mod)["main"], *lowered)
    rt(*args)
    np.testing.assert_allclose(args[out], expected[out], rtol=1e-4, atol=1e-4, err_msg=what)
    np.testing.assert_allclose(lowered[out], expected[out], rtol=1e-4, atol=1e-4, err_msg=what)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="runs code built for haswell, an x86-64 CPU model")
def test_columns_that_no_vector_divides_get_whole_vectors_and_a_masked_last_tile():
    # 37 columns: no vector of Haswell's divides them, so the register tile's columns are whole
    # vectors of 8 lanes (not scalar columns) and its last tile is partial; 32 rows leave a
    # partial last row tile where 6 or 14 rows are drawn. Every candidate computes the matmul with
    # every loop vectorized (the partial tile tests its row once and masks its columns).
    func = matmul(32, 37, 16)
    space = SpaceGenerator(func, HASWELL)
    for sketch in (0, 1):
        rows, columns = register_tile_draws(space.sketches[sketch], drawn=False)
        assert columns == [8, 16, 32] and 6 in rows, (rows, columns)
    drawn = set()
    for sketch in (0, 1):
        for seed in range(10):
            candidate = space.sample(sketch, seed)
            assert candidate is not None, space.rejections
            drawn.add(drawn_register_tile(candidate))
            check_vectorized(func, candidate, seed)
    assert any(37 % columns for _, columns in drawn), drawn
    assert any(32 % rows for rows, _ in drawn), drawn


def matmul_nt(m, n, k, batch=None):
    """C = A B^T, B laid out [n, k] (a dense layer's weight; K of Q K^T with a batch)."""
    lead = (batch,) if batch else ()
    A = te.placeholder(lead + (m, k), "float32", name="A")
    B = te.placeholder(lead + (n, k), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    if batch:
        C = te.compute((batch, m, n), lambda z, i, j: te.sum(A[z, i, r] * B[z, j, r], axis=r),
                       name="C")
    else:
        C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[j, r], axis=r), name="C")
    return te.create_prim_func([A, B, C])


@pytest.mark.parametrize("batch", [None, 3])
def test_an_operand_read_along_another_dimension_is_packed(batch):
    # B[j, k]: the columns j are B's first dimension, far apart; every tiled sketch packs B as
    # [j // NR, k, j % NR] (a 512^3 dense layer tuned 64 trials: 35.6 GFLOP/s without, 126.8
    # with, 141.7 for the same product with B laid out [k, j]).
    func = matmul_nt(64, 48, 32, batch)
    space = SpaceGenerator(func, "llvm")
    ndim = 3 if batch else 2
    names = ", ".join(f"d{i}" for i in range(ndim))
    lead = "d0, " if batch else ""
    row = "d1" if batch else "d0"
    last = f"d{ndim - 1}"
    for sketch in range(len(space.sketches)):
        assert 'ann_key="kiln.pack_read_dim", ann_val=%d' % (ndim - 2) in \
            space.sketches[sketch].as_python()
        for seed in range(3):
            candidate = space.sample(sketch, seed)
            assert candidate is not None, space.rejections
            text = candidate.trace.as_python()
            layout = re.escape(f"lambda {names}: [{lead}{row} // ") + r"(\d+)" + \
                re.escape(f", {last}, {row} % ") + r"(\d+)\]"
            packed = re.search(layout, text)
            assert packed and packed.group(1) == packed.group(2), text
            args = random_args(func, seed)
            expected = reference(func, args)
            kiln.build(candidate.mod)(*args)
            np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="runs code built for haswell, an x86-64 CPU model")
def test_candidates_of_random_matmul_shapes_compute_it_with_every_loop_vectorized():
    # Fuzz: products of random sizes (most of them divided by no vector: partial register tiles
    # in both dimensions, fused parallel loops that keep a tile's row test inside the vector
    # loop), A B and A B^T, a candidate of each sketch: each computes the product and vectorizes
    # every loop it asks to.
    rng = np.random.default_rng(7)
    for _ in range(10):
        m, n, k = (int(v) for v in rng.integers(1, 80, size=3))
        func = matmul_nt(m, n, k) if rng.integers(0, 2) else matmul(m, n, k)
        space = SpaceGenerator(func, HASWELL)
        for sketch in range(len(space.sketches)):
            seed = int(rng.integers(0, 1000))
            candidate = space.sample(sketch, seed)
            if candidate is not None:
                check_vectorized(func, candidate, seed, f"{m} x {n} x {k}, sketch {sketch}")


def test_the_register_tile_rows_are_unrolled_and_llvm_unrolls_nothing_else():
    # The tiled sketches unroll the register tile's rows themselves; every nest of a candidate
    # tells LLVM not to unroll or vectorize what stays a loop (kiln decided).
    space = SpaceGenerator(matmul(64, 48, 32), "llvm")
    for sketch in space.sketches:
        assert "sch.unroll(" in sketch.as_python()
    candidate = space.sample(0, 1)
    assert 'ann_key="pragma_llvm_unroll", ann_val=0' in candidate.trace.as_python()


def test_a_nest_that_only_packs_an_operand_unrolls_at_most_16_steps():
    # A packing copy runs at the speed of memory, loop or not: its own nest unrolls at most 16
    # steps whatever depth was drawn, the computation's nest the drawn depth (up to 512).
    func = matmul(64, 48, 32)
    space = SpaceGenerator(func, "llvm")
    packs = computations = 0
    for sketch in range(len(space.sketches)):
        for seed in range(8):
            candidate = space.sample(sketch, seed)
            assert candidate is not None, space.rejections
            sch = tir.Schedule(candidate.mod)
            compute_nest = sch.get_loops(sch.get_block("C"))[0]
            steps = sch.get(compute_nest).annotations.get("pragma_auto_unroll_max_step", 0)
            computations += steps > 16
            for name in ("A_global", "B_global"):
                try:
                    nest = sch.get_loops(sch.get_block(name))[0]
                except kiln.KilnError:
                    continue  # not packed
                if sch.get(nest).same_as(sch.get(compute_nest)):
                    continue  # packed per tile, inside the computation's nest
                packs += 1
                assert sch.get(nest).annotations.get("pragma_auto_unroll_max_step", 0) <= 16
    assert packs > 0 and computations > 0, (packs, computations)


def test_the_register_tile_fits_the_target():
    # The innermost tile of j (NR) is a whole number of vectors, and MR rows of it, one row of
    # the operand and a broadcast fit the vector registers (6 x 16 float32 with AVX2's 16).
    skylake = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512"
    for target, lanes, registers in ((HASWELL, 8, 16), (skylake, 16, 32)):
        space = SpaceGenerator(matmul(96, 128, 64), target)
        lists = [eval(line.split("candidates=")[1].split("]")[0] + "]")  # noqa: S307
                 for line in space.sketches[0].as_python().splitlines()
                 if "sample_categorical" in line and "kiln" not in line]
        rows, columns = lists[0], lists[1]
        assert columns and all(c % lanes == 0 for c in columns), columns
        for c in columns:
            vectors = c // lanes
            assert any(r * vectors + vectors + 1 <= registers for r in rows)
        assert 6 in rows and 16 in columns


def batch_matmul(batch, m, n, k):
    A = te.placeholder((batch, m, k), "float32", name="A")
    B = te.placeholder((batch, k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((batch, m, n), lambda z, i, j: te.sum(A[z, i, r] * B[z, r, j], axis=r),
                   name="C")
    return te.create_prim_func([A, B, C])


def categorical_decisions(candidate):
    """(candidates, chosen value) of each sample_categorical of the candidate's trace."""
    found = []
    for inst in candidate.decisions.as_json()["instructions"]:
        if inst["kind"] == "sample_categorical":
            values = inst["attrs"]["candidates"]
            found.append((values, values[inst["decision"]]))
    return found


def test_the_fullest_register_tile_is_drawn_where_it_does_not_divide_the_rows():
    # 6 x 16 fills AVX2's registers best; 6 does not divide 128 rows, so its last tile is
    # partial (a guard that lowering peels off). Other rows that do not divide are not drawn.
    func = matmul(128, 128, 64)
    space = SpaceGenerator(func, HASWELL)
    text = space.sketches[1].as_python().split("candidates=")[1].split("]")[0]
    rows = [int(x) for x in text.strip("[ ").split(",")]
    assert rows == [1, 2, 4, 6, 8, 14], rows
    drawn = 0
    for seed in range(40):
        candidate = space.sample(1, seed)
        if candidate is None or categorical_decisions(candidate)[0][1] != 6:
            continue
        args = random_args(func, seed)
        expected = reference(func, args)
        kiln.build(candidate.mod)(*args)
        np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)
        drawn += 1
        if drawn == 2:
            break
    assert drawn == 2


def register_tile_draws(trace, drawn=True):
    """(MR, NR) of the register tile multi_level_tiling drew in the trace, or with drawn=False
    the candidates each was drawn from."""
    tile = {}
    values = {}
    for inst in trace.as_json()["instructions"]:
        if inst["kind"] == "sample_categorical":
            candidates = inst["attrs"]["candidates"]
            values[inst["outputs"][0]] = candidates[inst["decision"]] if drawn else candidates
        if inst["kind"] == "annotate" and inst["attrs"]["ann_key"].startswith("kiln.register_"):
            tile[inst["attrs"]["ann_key"]] = values[inst["inputs"][1]]
    return tile["kiln.register_tile_rows"], tile["kiln.register_tile_columns"]


def drawn_register_tile(candidate):
    return register_tile_draws(candidate.decisions)


@pytest.mark.parametrize("workload", ["matmul", "conv"])
# Named targets, not the host: the space is only sampled for them, nothing is built or run.
@pytest.mark.parametrize("target, lanes, registers", [
    ("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell", 8, 16),
    ("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512", 16, 32),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1", 4, 32)])
def test_register_tiles_that_would_spill_are_drawn_again(workload, target, lanes, registers):
    # A tile of MR x NR float32 accumulators fits with one row of NR operand values and a
    # broadcast when MR * V + V + 1 <= registers (V = NR / lanes); the rows and columns are
    # drawn apart (on Haswell's 16 registers of 8 lanes 14 rows fit 8 columns, not 16), so a
    # draw that would spill is drawn again, counted, and neither a mutation nor a neighbour
    # proposes one.
    func = matmul(128, 128, 64) if workload == "matmul" else conv("NCHW", h=14, co=32)
    space = SpaceGenerator(func, target)
    sketches = [0, 1] if workload == "matmul" else along_filters(space)
    assert sketches

    def fits_tile(rows, columns):
        vectors = columns // lanes
        return rows * vectors + vectors + 1 <= registers

    def fits(candidate):
        return fits_tile(*drawn_register_tile(candidate))

    drawn = set()
    for sketch in sketches:
        for seed in range(12):
            candidate = space.sample(sketch, seed)
            assert candidate is not None, space.rejections
            assert fits(candidate), drawn_register_tile(candidate)
            drawn.add(drawn_register_tile(candidate))
            for neighbour in space.neighbours(candidate.decisions):
                assert fits(space.replay(sketch, neighbour))
            mutated = space.mutate(candidate.decisions, seed)
            if mutated is not None:
                assert fits(space.replay(sketch, mutated))
    # Refused draws were counted wherever the sketches' candidates make a tile that spills.
    spills = any(not fits_tile(rows, columns) for sketch in sketches
                 for rows_drawn, columns_drawn in [register_tile_draws(space.sketches[sketch],
                                                                       drawn=False)]
                 for rows in rows_drawn for columns in columns_drawn)
    refused = space.rejections.get("sample: RegisterTileSpillError", 0)
    assert (refused > 0) == spills, (space.rejections, spills)
    assert spills or workload == "conv"
    assert len({columns for _, columns in drawn}) >= 2, drawn


def test_a_batch_matmul_packs_each_batch_inside_the_parallel_loop():
    # The packed copy of B is made under the outermost loop, which iterates batches (one
    # batch's B at a time, while it is in cache); a matmul's, whose outermost loop iterates
    # rows that all read the whole of B, is one pass before the product (A's, packed along
    # the rows, may be made under that loop).
    func = batch_matmul(4, 24, 32, 16)
    space = SpaceGenerator(func, HASWELL)
    placed = 0
    for seed in range(60):
        candidate = space.sample(1, seed)
        assert candidate is not None, space.rejections
        if "B_global" not in str(candidate.mod):
            continue
        batch_tiles = next(i["decision"] for i in candidate.decisions.as_json()["instructions"]
                           if i["kind"] == "sample_perfect_tile")
        if batch_tiles[0] == 1:
            continue  # one iteration: no batch loop to make it under
        sch = tir.Schedule(candidate.mod)
        copy_loops = sch.get_loops(sch.get_block("B_global"))
        product_loops = sch.get_loops(sch.get_block("C"))
        assert sch.get(copy_loops[0]).same_as(sch.get(product_loops[0]))
        assert sch.get(copy_loops[0]).kind == "parallel"
        args = random_args(func, seed)
        expected = reference(func, args)
        kiln.build(candidate.mod)(*args)
        np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)
        placed += 1
    assert placed >= 2
    space = SpaceGenerator(matmul(64, 48, 32), HASWELL)
    packed = 0
    for seed in range(16):
        candidate = space.sample(1, seed)
        if "B_global" in str(candidate.mod):
            packed += 1
            sch = tir.Schedule(candidate.mod)
            copy_loops = sch.get_loops(sch.get_block("B_global"))
            product_loops = sch.get_loops(sch.get_block("C"))
            assert not sch.get(copy_loops[0]).same_as(sch.get(product_loops[0]))
    assert packed >= 1


def test_candidates_differ_and_replay_to_the_same_schedule():
    space = SpaceGenerator(matmul(64, 64, 64), "llvm")
    candidates = [space.sample(0, seed) for seed in range(8)]
    hashes = {c.hash for c in candidates if c is not None}
    assert len(hashes) > 1
    first = next(c for c in candidates if c is not None)
    again = space.replay(0, first.decisions)
    assert again.hash == first.hash
    kiln.ir.assert_structural_equal(again.mod, first.mod)


def test_mutation_changes_one_decision_and_stays_correct():
    func = matmul(32, 64, 16)
    space = SpaceGenerator(func, "llvm")
    parent = space.sample(0, 3)
    changed = 0
    for seed in range(10):
        trace = space.mutate(parent.decisions, seed)
        if trace is None:
            continue
        child = space.replay(0, trace)
        if child is None:
            continue
        changed += child.hash != parent.hash
        args = random_args(func, seed)
        expected = reference(func, args)
        kiln.build(child.mod)(*args)
        np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)
    assert changed > 0


def test_neighbours_move_one_factor():
    space = SpaceGenerator(matmul(32, 32, 32), "llvm")
    parent = space.sample(0, 1)
    neighbours = space.neighbours(parent.decisions)
    assert neighbours
    for trace in neighbours[:5]:
        assert space.replay(0, trace) is not None


def exp_twice(m=32, n=256, math=True):
    """A softmax whose exp is a stage of its own, read by the row sum and by the division
    (with math=False, a cheap element-wise stage instead of the exp)."""
    x = te.placeholder((m, n), "float32", name="x")
    e = te.compute((m, n), (lambda i, c: te.exp(x[i, c])) if math else
                   (lambda i, c: x[i, c] * 2.0), name="e")
    k = te.reduce_axis((0, n), name="k")
    total = te.compute((m,), lambda i: te.sum(e[i, k], axis=k), name="total")
    out = te.compute((m, n), lambda i, c: e[i, c] / total[i], name="out")
    return te.create_prim_func([x, out])


def test_an_exp_read_twice_is_inlined_or_kept_where_it_is_used():
    # Inlined, the exp runs once per consumer; kept, it can be computed per row by them.
    func = exp_twice()
    space = SpaceGenerator(func, HASWELL)
    texts = [sketch.as_python() for sketch in space.sketches]
    kept = [k for k, text in enumerate(texts) if "sch.compute_inline(" not in text]
    assert kept and len(kept) < len(texts)
    x = np.random.default_rng(0).standard_normal((32, 256)).astype("float32")
    expected = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    # Its compute location is sampled (inline, root, or a loop of its consumers): some
    # candidates keep it as a stage.
    stages = 0
    for seed in accepted_seeds(space, kept[0], 6):
        candidate = without_deep_unrolling(space, space.sample(kept[0], seed))
        stages += 'T.block("e")' in candidate.mod["main"].script()
        out = np.zeros_like(x)
        kiln.build(candidate.mod)(x, out)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-7)
    assert stages > 0
    # A cheap stage read twice is inlined in every sketch.
    cheap = SpaceGenerator(exp_twice(math=False), HASWELL)
    assert all("sch.compute_inline(" in s.as_python() for s in cheap.sketches)


def test_padding_is_inlined_into_the_convolution_or_kept_as_a_stage():
    func = padded_conv()
    space = SpaceGenerator(func, "llvm")
    texts = [sketch.as_python() for sketch in space.sketches]
    inlined = [k for k, text in enumerate(texts) if 'sch.compute_inline(block=b' in text]
    # Each with the tilings of multi_level_tiling: two, and a third along the filters where
    # the target's vectors divide them.
    assert len(inlined) in (2, 3) and len(texts) == 2 * len(inlined)
    kept = [k for k in range(len(texts)) if k not in inlined][0]
    args = random_args(func)
    expected = reference(func, args)
    for sketch in (inlined[0], kept):
        candidate = space.sample(sketch, 0)
        assert candidate is not None, space.rejections
        blocks = [b.split('"')[0] for b in candidate.mod["main"].script().split('T.block("')[1:]]
        assert ("pad" in blocks) == (sketch == kept)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", VectorizeFallbackWarning)
            rt = kiln.build(candidate.mod)
        if sketch == kept:
            # No guarded read is left in the convolution: a loop that falls back to serial is
            # one of the padding stage's (ax0, ax1 ... where compute_at put it), never conv's.
            fallbacks = [str(w.message) for w in caught
                         if issubclass(w.category, VectorizeFallbackWarning)]
            assert all(re.search(r"loop ax\d+ is not vectorized", m) for m in fallbacks), \
                fallbacks
        run_args = [a.copy() for a in args]
        rt(*run_args)
        np.testing.assert_allclose(run_args[2], expected[2], rtol=1e-4, atol=1e-4)


def test_an_avx512_target_tiles_rows_of_half_its_vectors():
    # 8 filters x 8 columns: no whole 16-lane zmm vector, so the register tiles use ymm halves
    # (8 lanes): the same three tilings per padding choice as with AVX2, drawing the same
    # register tiles (rows 1-8 x 8 columns; with 8 rows, 32 registers fit no more).
    func = padded_conv()

    def draws(target):
        return [re.findall(r"sample_categorical\(candidates=\[([\d, ]+)\]", sketch.as_python())
                for sketch in SpaceGenerator(func, target).sketches]

    avx512 = draws("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512")
    assert len(avx512) == 6 and avx512 == draws(HASWELL)
    assert all("8" in found for found in avx512), avx512


def conv(layout, h=10, ci=4, co=16, stride=1, depthwise=False, kernel=3):
    shape = (1, ci, h, h) if layout == "NCHW" else (1, h, h, ci)
    X = te.placeholder(shape, "float32", name="X")
    if depthwise:
        W = te.placeholder((ci, 1, 3, 3), "float32", name="W")
        out = topi.nn.depthwise_conv2d_nchw(X, W, stride, 1, 1)
    elif layout == "NCHW":
        W = te.placeholder((co, ci, kernel, kernel), "float32", name="W")
        out = topi.nn.conv2d_nchw(X, W, stride, kernel // 2, 1)
    else:
        W = te.placeholder((3, 3, ci, co), "float32", name="W")
        out = topi.nn.conv2d_nhwc(X, W, stride, 1, 1)
    return te.create_prim_func([X, W, out])


def along_filters(space):
    return [k for k, sketch in enumerate(space.sketches)
            if "kiln.pack_read_dim" in sketch.as_python()]


def test_a_convolution_gets_sketches_with_vectors_along_its_filters():
    # NCHW: the vectors of the innermost spatial loop (x) would read a sliding window of the
    # input; the third tiling puts them along the filters f instead: the accumulator tile keeps
    # f last, the weight is packed with the filters of a tile side by side ([f // NR, .., f %
    # NR]), the tile's rows are output columns. With the padding inlined or kept as a stage.
    space = SpaceGenerator(conv("NCHW"), HASWELL)
    filters = along_filters(space)
    assert len(filters) == 2
    for k in filters:
        text = space.sketches[k].as_python()
        assert 'index_map="lambda d0, d1, d2, d3: [d0, d2, d3, d1]"' in text
        assert 'ann_key="kiln.pack_read_dim", ann_val=0' in text
        assert "candidates=[8, 16]" in text  # the tile's filters: whole vectors of 8 lanes
    # A 1 x 1 convolution too (its window is one tap); and without a window, where the output
    # columns are no whole vectors: a matmul of 20 columns, its vectors along the rows, A packed
    # as [i // NR, k, i % NR].
    assert len(along_filters(SpaceGenerator(conv("NCHW", h=8, kernel=1), HASWELL))) == 1
    text = SpaceGenerator(matmul(64, 20, 32), HASWELL).sketches[-1].as_python()
    assert 'ann_key="kiln.pack_read_dim", ann_val=0' in text
    # No such sketch where the vectors run along the filters already (NHWC), where every
    # operand reads the channel (depthwise), for a matmul of whole vectors of columns; nor
    # where the filters are not whole vectors.
    for func in (conv("NHWC"), conv("NCHW", depthwise=True), matmul(64, 64, 32),
                 conv("NCHW", co=12)):
        assert along_filters(SpaceGenerator(func, HASWELL)) == []


@pytest.mark.parametrize("shape", [dict(), dict(stride=2), dict(h=7, co=32), dict(ci=3, co=24),
                                   dict(h=7, kernel=1), "matmul"])
def test_candidates_with_vectors_along_the_filters_compute_the_convolution(shape):
    func = matmul(64, 20, 32) if shape == "matmul" else conv("NCHW", **shape)
    space = SpaceGenerator(func, "llvm")
    filters = along_filters(space)
    if not filters:
        pytest.skip("the target's vectors do not divide the filters")
    args = random_args(func)
    expected = reference(func, args)
    for k in filters:
        for seed in range(3):
            candidate = space.sample(k, seed)
            assert candidate is not None, space.rejections
            text = candidate.trace.as_python()
            tile = re.search(r'index_map="lambda d0[^:]*: \[d0 // (\d+), [^\]]*, d0 % (\d+)\]"',
                             text)
            assert tile and tile.group(1) == tile.group(2), text
            lowered = str(tir.lower(candidate.mod))
            assert re.search(r"_local(_\d+)?\[T\.Ramp\(", lowered), lowered
            run_args = [a.copy() for a in args]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", VectorizeFallbackWarning)
                kiln.build(candidate.mod)(*run_args)
            np.testing.assert_allclose(run_args[2], expected[2], rtol=1e-4, atol=1e-4)


def matmul_epilogue(kind, m=32, n=64, k=32):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    if kind == "bias_relu":
        bias = te.placeholder((n,), "float32", name="bias")
        out = te.compute((m, n), lambda i, j: te.max(C[i, j] + bias[j], 0.0), name="epilogue")
        return te.create_prim_func([A, B, bias, out])
    # SwiGLU: the gate is the first half of the columns, the up projection the second.
    half = n // 2
    out = te.compute((m, half), lambda i, j: C[i, j] / (1.0 + te.exp(-C[i, j])) * C[i, j + half],
                     name="epilogue")
    return te.create_prim_func([A, B, out])


def block_names(mod):
    return [b.split('"')[0] for b in mod["main"].script().split('T.block("')[1:]]


@pytest.mark.parametrize("kind,primitive,count", [("bias_relu", "sch.reverse_compute_inline(", 1),
                                                  ("swiglu", "sch.reverse_compute_at(", 2)])
def test_an_epilogue_is_fused_into_the_tiles_of_its_matmul(kind, primitive, count):
    # Each tiling of multi_level_tiling comes with and without the output epilogue fused: an
    # element-wise one inlined into the write-back of the accumulator tile, a SwiGLU (two
    # columns of each row) computed under the outermost loop of the tiles.
    func = matmul_epilogue(kind)
    space = SpaceGenerator(func, "llvm")
    texts = [sketch.as_python() for sketch in space.sketches]
    assert len(texts) == 4
    # (Every sketch moves the write-back of the accumulator tile with reverse_compute_at.)
    fused = [k for k, text in enumerate(texts) if text.count(primitive) == count]
    assert len(fused) == 2, texts
    args = random_args(func)
    expected = reference(func, args)
    for sketch in range(len(texts)):
        for seed in range(2):
            candidate = space.sample(sketch, seed)
            assert candidate is not None, space.rejections
            blocks = block_names(candidate.mod)
            if sketch in fused and kind == "bias_relu":
                assert "epilogue" not in blocks, blocks
            script = candidate.mod["main"].script()
            if sketch in fused and kind == "swiglu":
                # One loop nest under the root block holds the matmul and the epilogue.
                nests = [n for n in re.split(r"\n {8}for ", script)[1:]
                         if 'T.block("epilogue")' in n]
                assert len(nests) == 1 and 'T.block("C")' in nests[0], script
            run_args = [a.copy() for a in args]
            kiln.build(candidate.mod)(*run_args)
            np.testing.assert_allclose(run_args[-1], expected[-1], rtol=1e-4, atol=1e-4)


def test_an_elementwise_function_gets_parallel_and_vector_loops():
    A = te.placeholder((64, 256), "float32", name="A")
    B = te.compute((64, 256), lambda i, j: A[i, j] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    space = SpaceGenerator(func, "llvm", num_threads=2)
    candidate = space.sample(0, 0)
    script = candidate.mod["main"].script()
    assert "T.parallel(" in script
    args = random_args(func)
    kiln.build(candidate.mod)(*args)
    np.testing.assert_allclose(args[1], args[0] * 2.0)


def streaming_decision(candidate):
    """The kiln.nontemporal decision of a candidate's trace, or None where it has none."""
    instructions = candidate.decisions.as_json()["instructions"]
    for inst in instructions:
        if inst["kind"] == "annotate" and inst["attrs"]["ann_key"] == "kiln.nontemporal":
            sample = next(s for s in instructions if s["outputs"] == inst["inputs"][1:])
            return sample["attrs"]["candidates"][sample["decision"]]
    return None


def test_outputs_larger_than_the_caches_may_stream():
    # 2 GiB of buffers outgrow any last-level cache (sampling schedules; nothing is allocated).
    A = te.placeholder((16384, 16384), "float32", name="A")
    B = te.compute((16384, 16384), lambda i, j: A[i, j] * 2.0, name="B")
    space = SpaceGenerator(te.create_prim_func([A, B]), "llvm", num_threads=2)
    by_decision = {}
    for seed in range(16):
        candidate = space.sample(0, seed)
        by_decision.setdefault(streaming_decision(candidate), candidate)
    assert set(by_decision) == {0, 1}
    assert "pragma_nontemporal" in by_decision[1].mod["main"].script()
    assert "pragma_nontemporal" not in by_decision[0].mod["main"].script()
    assert "!nontemporal" in kiln.build(by_decision[1].mod).get_source("ll")
    # A function that fits the caches is not offered the choice.
    small = SpaceGenerator(matmul(64, 64, 64), "llvm", num_threads=2)
    for sketch in range(len(small.sketches)):
        assert streaming_decision(small.sample(sketch, 0)) is None


def test_symbolic_shapes_are_refused():
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(kiln.KilnValueError, match=r"symbolic dimension n"):
        SpaceGenerator(te.create_prim_func([A, B]), "llvm")


def test_an_annotation_of_a_sampled_value_follows_its_decision():
    func = matmul(8, 8, 8)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    v = sch.sample_categorical([16, 64], [0.5, 0.5], decision=1)
    sch.annotate(block, "kiln.test", v)
    assert 'ann_val=v1, ann_key="kiln.test"' in sch.trace.as_python()
    replayed = tir.Schedule(func)
    sch.trace.with_decision(1, 0).apply_to_schedule(replayed)
    assert '"kiln.test": 16' in replayed.mod["main"].script()


def test_a_replay_redraws_a_tile_decision_an_earlier_change_invalidated():
    space = SpaceGenerator(matmul(48, 64, 32), "llvm")
    parent = space.sample(0, 0)
    instructions = parent.decisions.as_json()["instructions"]
    rows = next(i for i, inst in enumerate(instructions) if inst["kind"] == "sample_categorical")
    other = (instructions[rows]["decision"] + 1) % len(instructions[rows]["attrs"]["candidates"])
    child = space.replay(0, parent.decisions.with_decision(rows, other))
    assert child is not None, space.rejections


# ---------------------------------------------------------------------------------------------
# add_rfactor and random_compute_location (with the mutator of compute locations)


def vector_sum(n=1 << 16):
    A = te.placeholder((n,), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((), lambda: te.sum(A[k], axis=k), name="B")
    return te.create_prim_func([A, B])


def matrix_sum(m=256, n=256):
    A = te.placeholder((m, n), "float32", name="A")
    k1 = te.reduce_axis((0, m), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    B = te.compute((), lambda: te.sum(A[k1, k2], axis=[k1, k2]), name="B")
    return te.create_prim_func([A, B])


def row_sum(m=4, n=65536):
    A = te.placeholder((m, n), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B])


def softmax(m=64, n=1024):
    A = te.placeholder((m, n), "float32", name="A")
    k1 = te.reduce_axis((0, n), name="k1")
    mx = te.compute((m,), lambda i: te.max(A[i, k1], axis=k1), name="max")
    k2 = te.reduce_axis((0, n), name="k2")
    es = te.compute((m,), lambda i: te.sum(te.exp(A[i, k2] - mx[i]), axis=k2), name="expsum")
    out = te.compute((m, n), lambda i, j: te.exp(A[i, j] - mx[i]) / es[i], name="softmax")
    return te.create_prim_func([A, out])


def rms_norm(m=32, n=4096, eps=1e-6):
    X = te.placeholder((m, n), "float32", name="X")
    W = te.placeholder((n,), "float32", name="W")
    k = te.reduce_axis((0, n), name="k")
    ss = te.compute((m,), lambda i: te.sum(X[i, k] * X[i, k], axis=k), name="sumsq")
    Y = te.compute((m, n), lambda i, j: X[i, j] * te.rsqrt(ss[i] / n + eps) * W[j], name="rms")
    return te.create_prim_func([X, W, Y])


def numpy_result(workload, args):
    """What the function writes into its last argument, in float64."""
    x = args[0].astype("float64")
    if workload in ("vector_sum", "matrix_sum"):
        return x.sum()
    if workload == "row_sum":
        return x.sum(axis=1)
    if workload == "softmax":
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return x / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + 1e-6) * args[1]


WORKLOADS = {"vector_sum": vector_sum, "matrix_sum": matrix_sum, "row_sum": row_sum,
             "softmax": softmax, "rms_norm": rms_norm}


def sketches_with(space, kind):
    return [i for i, s in enumerate(space.sketches) if f"sch.{kind}(" in s.as_python()]


def check_candidate(workload, func, candidate, seed):
    args = random_args(func, seed)
    kiln.build(candidate.mod)(*args)
    # A float32 sum of 65536 terms in one chain is off by ~1e-3 from the float64 one.
    atol = 1e-2 if workload.endswith("sum") else 1e-5
    np.testing.assert_allclose(args[-1], numpy_result(workload, args), rtol=1e-4, atol=atol)


@pytest.mark.parametrize("workload", ["vector_sum", "matrix_sum", "row_sum"])
def test_a_long_reduction_gets_two_rfactor_sketches(workload):
    space = SpaceGenerator(WORKLOADS[workload](), "llvm", num_threads=4)
    assert len(space.sketches) == 3
    assert sketches_with(space, "rfactor") == [1, 2]
    halves = [s.as_python().split("sch.rfactor(loop=")[1].split(",")[0] for s in space.sketches[1:]]
    assert halves[0] != halves[1]  # the outer half, then the inner half of one split
    # Several reduction loops are fused into one first.
    assert ("sch.fuse(" in space.sketches[1].as_python()) == (workload == "matrix_sum")


def test_a_matmul_gets_no_rfactor():
    space = SpaceGenerator(matmul(256, 256, 256), "llvm", num_threads=4)
    assert sketches_with(space, "rfactor") == []


@pytest.mark.parametrize("workload", ["row_sum", "softmax", "rms_norm"])
def test_row_reductions_with_enough_rows_get_vector_partial_results(workload):
    # Enough rows for the threads: no parallel partial sums, but one sketch whose partial result
    # is a vector of lanes, computed where it is used and vectorized.
    func = {"row_sum": row_sum(512, 256), "softmax": softmax(64, 512),
            "rms_norm": rms_norm(32, 512)}[workload]
    space = SpaceGenerator(func, HASWELL, num_threads=4)
    factored = sketches_with(space, "rfactor")
    assert factored
    vectorized = 0
    for sketch in factored:
        for seed in accepted_seeds(space, sketch, 2):
            candidate = without_deep_unrolling(space, space.sample(sketch, seed))
            text = candidate.mod["main"].script()
            assert "_rf" in text
            vectorized += "T.vectorized(" in text
            check_candidate(workload, func, candidate, seed)  # built for the host
    assert vectorized > 0
    assert space.rejections == {}


@pytest.mark.parametrize("workload", ["vector_sum", "matrix_sum", "row_sum"])
@pytest.mark.parametrize("sketch", [1, 2])
def test_rfactor_candidates_compute_the_function(workload, sketch):
    # The partial sums of row_sum are never drawn inside the rows' reduction loop (where they
    # would be one lane at a time): no draw is refused.
    func = WORKLOADS[workload]()
    space = SpaceGenerator(func, "llvm", num_threads=4)
    for seed in accepted_seeds(space, sketch, 3):
        candidate = space.sample(sketch, seed)
        assert "B_rf" in candidate.mod["main"].script()
        check_candidate(workload, func, candidate, seed)
    assert space.rejections == {}


def test_the_reductions_of_softmax_and_rmsnorm_get_a_compute_location():
    text = SpaceGenerator(softmax(), "llvm", num_threads=4).sketches[0].as_python()
    assert 'name="expsum")\nl1 = sch.sample_compute_location(block=b0' in text
    assert "sch.compute_at(block=b2, loop=l3" in text and 'name="max")' in text
    space = SpaceGenerator(rms_norm(), "llvm", num_threads=4)
    assert sketches_with(space, "sample_compute_location") == [0, 1, 2]
    # A matmul's one block is an output, tiled: nothing to move.
    assert sketches_with(SpaceGenerator(matmul(64, 64, 64), "llvm"), "compute_at") == []


def test_every_reduction_of_a_softmax_gets_a_compute_location_in_every_sketch():
    # The rules' own draws, when they write the sketches, are not narrowed to the locations a
    # sampled candidate may take: where the row sum went then decides whether the row max can
    # still be moved, and with narrowed draws two of the four sketches left it in place.
    space = SpaceGenerator(softmax(), "llvm", num_threads=4)
    assert len(sketches_with(space, "rfactor")) >= 2
    for k, sketch in enumerate(space.sketches):
        text = sketch.as_python()
        stages = {"max", "expsum"} | set(re.findall(r'name="(\w+_rf)"', text))
        for stage in stages:
            assert re.search(rf'name="{stage}"\)\nl\d+ = sch.sample_compute_location', text), \
                (k, stage)


def accepted_seeds(space, sketch, count):
    """The first `count` seeds whose candidate of `sketch` the space accepts."""
    seeds = [seed for seed in range(32) if space.sample(sketch, seed) is not None][:count]
    assert len(seeds) == count, space.rejections
    return seeds


def without_deep_unrolling(space, candidate):
    """The candidate unrolled at most 16 deep: LLVM takes seconds to compile exp unrolled 512
    times, and the unroll depth is not what these tests are about."""
    instructions = candidate.decisions.as_json()["instructions"]
    unroll = [i for i, inst in enumerate(instructions) if inst["kind"] == "sample_categorical"
              and inst["attrs"]["candidates"] == [0, 16, 64, 512]][-1]
    if instructions[unroll]["decision"] <= 1:
        return candidate
    return space.replay(candidate.sketch, candidate.decisions.with_decision(unroll, 1))


@pytest.mark.parametrize("workload", ["softmax", "rms_norm"])
def test_compute_location_candidates_compute_the_function(workload):
    # Smaller than above: a reduction computed at the innermost loop of its consumer runs once
    # per element, m * n * n steps.
    func = WORKLOADS[workload](16, 256)
    space = SpaceGenerator(func, "llvm", num_threads=4)
    locations = set()
    for sketch in range(len(space.sketches)):
        for seed in accepted_seeds(space, sketch, 2):
            candidate = without_deep_unrolling(space, space.sample(sketch, seed))
            locations.add(tuple(i["decision"] for i in candidate.decisions.as_json()["instructions"]
                                if i["kind"] == "sample_compute_location"))
            check_candidate(workload, func, candidate, seed)
    assert len(locations) >= 2
    assert space.rejections == {}


def test_a_mutated_compute_location_is_another_valid_one():
    func = softmax(16, 128)
    space = SpaceGenerator(func, "llvm", num_threads=4)
    parent = space.sample(0, accepted_seeds(space, 0, 2)[1])
    before = parent.decisions.as_json()["instructions"]
    moved = 0
    for seed in range(40):
        trace = space.mutate(parent.decisions, seed)
        if trace is None:
            continue
        after = trace.as_json()["instructions"]
        changed = [i for i, inst in enumerate(after)
                   if inst.get("decision") != before[i].get("decision")]
        if before[changed[0]]["kind"] != "sample_compute_location":
            continue
        child = space.replay(0, trace)
        assert child is not None, space.rejections
        # Valid, so the replay kept it rather than drawing another.
        assert child.decisions.as_json()["instructions"][changed[0]]["decision"] == \
            after[changed[0]]["decision"]
        check_candidate("softmax", func, without_deep_unrolling(space, child), seed)
        moved += 1
    assert moved >= 3
    assert space.rejections == {}


def test_a_malformed_decision_is_refused_with_a_counted_reason():
    space = SpaceGenerator(softmax(16, 128), "llvm", num_threads=4)
    parent = space.sample(0, accepted_seeds(space, 0, 1)[0])
    site = next(i for i, inst in enumerate(parent.decisions.as_json()["instructions"])
                if inst["kind"] == "sample_compute_location")
    assert space.replay(0, parent.decisions.with_decision(site, "root")) is None
    assert space.rejections.get("replay: error") == 1
    # A location that names no loop where the block can go is drawn anew, not refused as
    # malformed, among the locations that compute each value once.
    redrawn = space.replay(0, parent.decisions.with_decision(site, 999))
    assert space.rejections == {"replay: error": 1}
    assert redrawn is not None
    rfactor_space = SpaceGenerator(vector_sum(), "llvm", num_threads=4)
    parent = rfactor_space.sample(1, 0)
    tile = next(i for i, inst in enumerate(parent.decisions.as_json()["instructions"])
                if inst["kind"] == "sample_perfect_tile")
    assert rfactor_space.replay(1, parent.decisions.with_decision(tile, [[1], 2])) is None
    assert rfactor_space.rejections == {"replay: error": 1}


def permuted(shape, axes):
    """T = np.transpose(X, axes) as a te function."""
    X = te.placeholder(shape, "float32", name="X")

    def element(*index):
        source = [None] * len(shape)
        for position, axis in enumerate(axes):
            source[axis] = index[position]
        return X[tuple(source)]

    T = te.compute(tuple(shape[a] for a in axes), element, name="T")
    return te.create_prim_func([X, T])


@pytest.mark.parametrize("shape, axes, order", [
    ((64, 96), (1, 0), "l5, l9, l6, l10"),  # a transpose: the read's rows run along i (l1)
    ((2, 16, 12, 24), (0, 2, 3, 1), "l1, l2, l7, l11, l8, l12"),  # NCHW -> NHWC: w (l3), c (l4)
])
def test_a_transpose_gets_a_sketch_with_tiles_of_both_rows(shape, axes, order):
    func = permuted(shape, axes)
    space = SpaceGenerator(func, "llvm")
    assert len(space.sketches) == 2  # the block as it is, and tiled
    text = space.sketches[1].as_python()
    assert text.count("max_innermost_factor=32, n=2") == 2
    # The other loops outside, then the outer parts, then the tile: the written rows innermost.
    assert f"sch.reorder({order})" in text
    for seed in range(4):
        candidate = space.sample(1, seed)
        assert candidate is not None, space.rejections
        args = random_args(func, seed)
        kiln.build(candidate.mod)(*args)
        np.testing.assert_array_equal(args[1], np.transpose(args[0], axes))


def test_element_wise_broadcast_and_short_rows_get_no_transpose_tiles():
    X = te.placeholder((64, 96), "float32", name="X")
    b = te.placeholder((64,), "float32", name="b")
    shifted = te.create_prim_func([X, b, te.compute((64, 96), lambda i, j: X[i, j] + b[i])])
    for func in (shifted, permuted((4, 96), (1, 0)), matmul(64, 64, 32)):
        assert not any("max_innermost_factor=32" in s.as_python()
                       for s in SpaceGenerator(func, "llvm").sketches)


@pytest.mark.parametrize("batch", [None, 3])
def test_a_matrix_vector_product_gets_vector_partial_results_along_its_rows(batch):
    # y = A x (batched: the scores of one query against the keys): the sketches with partial
    # results along A's rows (rfactor) load A as vectors; their candidates compute y.
    lead = () if batch is None else (batch,)
    A = te.placeholder(lead + (64, 256), "float32", name="A")
    x = te.placeholder(lead + (256,), "float32", name="x")
    r = te.reduce_axis((0, 256), name="r")
    if batch is None:
        y = te.compute((64,), lambda i: te.sum(A[i, r] * x[r], axis=r), name="y")
    else:
        y = te.compute((batch, 64), lambda b, i: te.sum(A[b, i, r] * x[b, r], axis=r), name="y")
    func = te.create_prim_func([A, x, y])
    space = SpaceGenerator(func, "llvm")
    along_rows = [k for k, s in enumerate(space.sketches) if "sch.rfactor(" in s.as_python()]
    assert len(along_rows) == 2
    for sketch in along_rows:
        accepted = 0
        for seed in range(8):
            candidate = space.sample(sketch, seed)
            if candidate is None:  # refused by a postprocessor (a counted reason)
                continue
            accepted += 1
            args = random_args(func, seed)
            kiln.build(candidate.mod)(*args)
            np.testing.assert_allclose(args[2], np.einsum("...ir,...r->...i", args[0], args[1]),
                                       rtol=1e-4, atol=1e-4)
        assert accepted >= 3, space.rejections


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="runs code built for haswell, an x86-64 CPU model")
@pytest.mark.parametrize("op", ["sum", "max", "softmax"])
def test_rows_that_no_vector_divides_get_vector_partial_results_with_a_partial_last_one(op):
    # 197 columns (a ViT's attention scores): the partial results along each row are whole
    # vectors, the last one partial; every candidate of those sketches computes the result with
    # every loop it vectorizes vector code.
    X = te.placeholder((256, 197), "float32", name="X")
    out = {"sum": lambda: topi.sum(X, axis=1), "max": lambda: topi.max(X, axis=1),
           "softmax": lambda: topi.nn.softmax(X)}[op]()
    func = te.create_prim_func([X, out])
    space = SpaceGenerator(func, HASWELL)
    factored = [k for k, s in enumerate(space.sketches) if "sch.rfactor(" in s.as_python()]
    assert len(factored) >= 3 if op == "softmax" else len(factored) == 1
    for sketch in factored:
        for seed in range(3):
            candidate = space.sample(sketch, seed)
            assert candidate is not None, space.rejections
            assert "T.where(" in str(candidate.mod)  # the partial last vector
            check_vectorized(func, candidate, seed, f"sketch {sketch}", out=1)


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_a_global_pooling_sums_whole_rows_of_height_times_width(pool):
    # The pooled height and width, whole rows of X, fused into one loop whose partial results
    # are vectors; every candidate computes the pooling.
    X = te.placeholder((1, 32, 12, 12), "float32", name="X")
    func = te.create_prim_func([X, topi.nn.global_pool(X, pool)])
    space = SpaceGenerator(func, "llvm")
    fused = [k for k, s in enumerate(space.sketches)
             if "sch.fuse(" in s.as_python() and "sch.rfactor(" in s.as_python()]
    assert len(fused) == 1
    assert not any("cache_write" in s.as_python() for s in space.sketches)
    reduce = np.mean if pool == "avg" else np.max
    accepted = 0
    for seed in range(6):
        candidate = space.sample(fused[0], seed)
        if candidate is None:  # refused by a postprocessor (a counted reason)
            continue
        accepted += 1
        args = random_args(func, seed)
        kiln.build(candidate.mod)(*args)
        np.testing.assert_allclose(args[1], reduce(args[0], axis=(2, 3), keepdims=True),
                                   rtol=1e-5, atol=1e-5)
    assert accepted >= 3, space.rejections


def test_a_row_no_legal_vector_divides_is_vectorized_with_a_masked_last_step():
    # B = A * 2 over rows of 3 x lanes + 2 elements (no power-of-two vector of at least the
    # target's lanes divides them): the innermost loop is split by one register's lanes and
    # vectorized, and the last, partial step stores only its lanes (no serial fallback).
    lanes = kiln.target.Target("llvm").vector_lanes("float32")
    cols = 3 * lanes + 2
    A = te.placeholder((16, cols), "float32", name="A")
    B = te.compute((16, cols), lambda i, j: A[i, j] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    space = SpaceGenerator(func, "llvm")
    args = random_args(func)
    expected = reference(func, args)
    for sketch in range(len(space.sketches)):
        candidate = space.sample(sketch, 0)
        assert candidate is not None, space.rejections
        assert f"T.vectorized({lanes})" in candidate.mod["main"].script()
        with warnings.catch_warnings():
            warnings.simplefilter("error", VectorizeFallbackWarning)
            rt = kiln.build(candidate.mod)
        assert "@llvm.masked.store" in rt.get_source("ll")
        run_args = [a.copy() for a in args]
        rt(*run_args)
        np.testing.assert_array_equal(run_args[1], expected[1])
