"""The tuner on a composed block of topi operators, RMSNorm -> matmul -> SwiGLU, with a small
budget: the tuned build matches NumPy, and the element-wise stages of the RMSNorm are inlined
into the matmul, and the design space can compute the SwiGLU epilogue (the output, which reads
the matmul at two columns) inside the matmul's tiles."""
import re

import numpy as np
import pytest

import kiln
from kiln import autotune as ms
from kiln import te, topi

from topi_helpers import rand

ROWS, HIDDEN, FFN = 32, 64, 64


def rms_norm_matmul_swiglu():
    x = te.placeholder((ROWS, HIDDEN), "float32", name="x")
    g = te.placeholder((HIDDEN,), "float32", name="g")
    w = te.placeholder((2 * FFN, HIDDEN), "float32", name="w")  # [gate; up] stacked
    y = topi.nn.swiglu(topi.nn.dense(topi.nn.rms_norm(x, g, axis=-1), w))
    return te.create_prim_func([x, g, w, y])


def reference(x, g, w):
    h = (x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5) * g) @ w.T
    gate, up = h[:, :FFN], h[:, FFN:]
    return gate / (1 + np.exp(-gate)) * up


def stages(func):
    names = [part.split('"')[0] for part in func.script().split('T.block("')[1:]]
    return [name for name in names if name != "root"]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    # The search's own candidates, without the default schedule's baseline record: that one
    # keeps the RMSNorm stages apart and, in 12 trials, may be the fastest record.
    func = rms_norm_matmul_swiglu()
    work_dir = tmp_path_factory.mktemp("tune_block")
    db = ms.tune_tir(func, target="llvm", work_dir=str(work_dir), max_trials_global=12,
                     num_trials_per_iter=12, baseline=None)
    return func, db


def test_the_tuned_block_matches_numpy(tuned):
    func, db = tuned
    rng = np.random.default_rng(0)
    x, g, w = rand(rng, ROWS, HIDDEN), rand(rng, HIDDEN), rand(rng, 2 * FFN, HIDDEN)
    out = np.zeros((ROWS, FFN), "float32")
    kiln.build(func, target="llvm", database=db)(x, g, w, out)
    np.testing.assert_allclose(out, reference(x, g, w), rtol=1e-4, atol=1e-5)


def test_the_rms_norm_element_wise_stages_are_inlined(tuned):
    func, db = tuned
    assert {"T_rms_norm", "T_rms_norm_mean_square"} <= set(stages(func))
    best = stages(ms.compile_tir(db, func, target="llvm").mod["main"])
    assert "T_rms_norm" not in best and "T_rms_norm_mean_square" not in best
    assert "T_dense" in best and "T_rms_norm_mean_square_sum" in best


def test_the_swiglu_epilogue_can_be_fused_into_the_matmul_tiles():
    # The SwiGLU reads the matmul at two columns of a row, so it cannot be inlined; the design
    # space has sketches that compute it under the outermost loop of the matmul's tiles, once
    # the rows it reads are written, and their candidates compute the block.
    func = rms_norm_matmul_swiglu()
    space = ms.SpaceGenerator(func, "llvm")
    fused = [k for k, sketch in enumerate(space.sketches)
             if "sch.get_consumers(" in sketch.as_python()]
    assert fused, [sketch.as_python() for sketch in space.sketches]
    rng = np.random.default_rng(1)
    x, g, w = rand(rng, ROWS, HIDDEN), rand(rng, HIDDEN), rand(rng, 2 * FFN, HIDDEN)
    # The first candidate a postprocessor accepts (others put a reduction where it would be
    # recomputed, a counted reason).
    candidate = next((c for c in (space.sample(k, seed) for seed in range(16) for k in fused)
                      if c is not None), None)
    assert candidate is not None, space.rejections
    script = candidate.mod["main"].script()
    nests = [n for n in re.split(r"\n {8}for ", script)[1:] if 'T.block("T_swiglu")' in n]
    assert len(nests) == 1 and 'T.block("T_dense")' in nests[0], script
    out = np.zeros((ROWS, FFN), "float32")
    kiln.build(candidate.mod, target="llvm")(x, g, w, out)
    np.testing.assert_allclose(out, reference(x, g, w), rtol=1e-4, atol=1e-5)
