"""Streaming (non-temporal) stores: a loop annotated "pragma_nontemporal" stores the outputs it
does not read past the caches when their data is aligned to a cache line, and plainly
otherwise; either way the results are the function's."""
import platform
import re
import warnings

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.error import StreamingAlignmentWarning

from runtime_helpers import aligned_empty


def scale(m=64, n=256):
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return te.create_prim_func([A, B])


def streamed(func=None, block="B", parallel=False, value=1, lanes=16):
    sch = tir.Schedule(func if func is not None else scale())
    i, j = sch.get_loops(sch.get_block(block))
    _, ji = sch.split(j, factors=[None, lanes])
    sch.vectorize(ji)
    if parallel:
        sch.parallel(i)
    sch.annotate(i, "pragma_nontemporal", value)
    return sch


def nontemporal_stores(ll):
    return len(re.findall(r"^\s*store <\d+ x float>.*!nontemporal", ll, re.M))


def check(rt, a, b):
    rt(a, b)
    a_np = a.numpy() if hasattr(a, "numpy") else a
    b_np = b.numpy() if hasattr(b, "numpy") else b
    np.testing.assert_allclose(b_np, a_np * 2.0 + 1.0, rtol=1e-6)


@pytest.mark.parametrize("parallel", [False, True])
def test_an_annotated_loop_streams_its_output_and_fences(parallel):
    rt = kiln.build(streamed(parallel=parallel).mod)
    ll = rt.get_source("ll")
    # The streaming copy's vector stores are non-temporal; the plain copy's are not.
    assert nontemporal_stores(ll) >= 1
    assert len(re.findall(r"^\s*store <\d+ x float>", ll, re.M)) > nontemporal_stores(ll)
    assert "fence seq_cst" in ll
    if platform.machine() in ("x86_64", "AMD64"):
        assert "vmovnt" in rt.get_source("asm") or "movnt" in rt.get_source("asm")


@pytest.mark.parametrize("parallel", [False, True])
def test_aligned_and_misaligned_outputs_get_the_function_result(parallel):
    rt = kiln.build(streamed(parallel=parallel).mod)
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (64, 256)).astype("float32")
    # kiln.nd arrays are aligned to 64 bytes: the streaming copy runs.
    a, b = kiln.nd.array(data), kiln.nd.empty((64, 256))
    check(rt, a, b)
    # A NumPy view 4 bytes past a cache line: the plain copy runs (and the call warns).
    b_view = aligned_empty((64, 256), offset=4)
    with pytest.warns(StreamingAlignmentWarning):
        check(rt, data, b_view)
    old = kiln.runtime.get_num_threads()
    try:
        for threads in (1, 3):
            kiln.runtime.set_num_threads(threads)
            b_view[:] = 0
            check(rt, data, b_view)
            b.copyfrom(np.zeros((64, 256), "float32"))
            check(rt, a, b)
    finally:
        kiln.runtime.set_num_threads(0)


def test_the_spec_names_the_streamed_output_and_a_misaligned_one_warns_once():
    """The manifest gives the streamed output its streaming alignment (a cache line); a call
    with that output misaligned warns once per function, naming the argument, how far past the
    alignment it is and how to allocate it; aligned calls and inputs do not warn."""
    rt = kiln.build(streamed().mod)
    args = rt["main"].spec["args"]
    assert [a["streaming_alignment"] for a in args] == [0, 64]
    plain = tir.Schedule(scale())
    assert [a["streaming_alignment"] for a in kiln.build(plain.mod)["main"].spec["args"]] == \
        [0, 0]
    data = np.random.default_rng(4).uniform(-1, 1, (64, 256)).astype("float32")
    misaligned_input = aligned_empty((64, 256), offset=16)
    misaligned_input[:] = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(rt, misaligned_input, kiln.nd.empty((64, 256)))  # only the output streams
    fresh = kiln.build(streamed().mod)
    with pytest.warns(StreamingAlignmentWarning) as caught:
        check(fresh, data, aligned_empty((64, 256), offset=16))
        check(fresh, data, aligned_empty((64, 256), offset=16))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("kiln.runtime.Function main: argument 1 (B) is 16 bytes past a "
                              "multiple of 64; the function stores it past the caches")
    assert "kiln.nd.empty" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(StreamingAlignmentWarning):
            kiln.build(streamed().mod)(data, aligned_empty((64, 256), offset=4))


def test_a_row_length_that_is_no_whole_line_still_streams_correctly():
    # Rows of 40 floats: the vectors of a row start 32 bytes apart from a line boundary.
    func = scale(9, 40)
    rt = kiln.build(streamed(func, lanes=8).mod)
    assert nontemporal_stores(rt.get_source("ll")) >= 1
    a = kiln.nd.array(np.arange(360, dtype="float32").reshape(9, 40))
    b = kiln.nd.empty((9, 40))
    check(rt, a, b)


def test_an_output_the_loop_also_reads_does_not_stream():
    A = te.placeholder((64, 256), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((64, 256), lambda i, j: te.sum(A[i, j] * k.astype("float32"), axis=k),
                   name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j, kk = sch.get_loops(sch.get_block("B"))
    sch.reorder(i, kk, j)
    _, ji = sch.split(j, factors=[None, 16])
    sch.vectorize(ji)
    sch.annotate(i, "pragma_nontemporal", 1)
    rt = kiln.build(sch.mod)
    ll = rt.get_source("ll")
    assert "!nontemporal" not in ll and "fence" not in ll
    data = np.random.default_rng(1).uniform(-1, 1, (64, 256)).astype("float32")
    out = kiln.nd.empty((64, 256))
    rt(kiln.nd.array(data), out)
    np.testing.assert_allclose(out.numpy(), data * 6.0, rtol=1e-5)


def test_an_intermediate_buffer_under_the_loop_does_not_stream():
    A = te.placeholder((64, 256), name="A")
    T = te.compute((64, 256), lambda i, j: A[i, j] + 1.0, name="T")
    B = te.compute((64, 256), lambda i, j: T[i, j] * 3.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops(sch.get_block("B"))
    sch.compute_at(sch.get_block("T"), i)
    for block in ("T", "B"):
        inner = sch.get_loops(sch.get_block(block))[-1]
        sch.vectorize(sch.split(inner, factors=[None, 16])[1])
    sch.annotate(i, "pragma_nontemporal", 1)
    # Only B's store streams, in the streaming copy; T's loop is not copied (unoptimized IR:
    # T's store, and B's in the streaming and in the plain copy).
    ll = kiln.build(sch.mod, target="llvm -opt-level=0").get_source("ll")
    assert nontemporal_stores(ll) == 1
    assert len(re.findall(r"^\s*store <16 x float>", ll, re.M)) == 3
    rt = kiln.build(sch.mod)
    data = np.random.default_rng(2).uniform(-1, 1, (64, 256)).astype("float32")
    out = kiln.nd.empty((64, 256))
    rt(kiln.nd.array(data), out)
    np.testing.assert_allclose(out.numpy(), (data + 1.0) * 3.0, rtol=1e-6)


def test_a_loop_without_the_annotation_or_with_zero_streams_nothing():
    plain = tir.Schedule(scale())
    _, j = plain.get_loops(plain.get_block("B"))
    plain.vectorize(plain.split(j, factors=[None, 16])[1])
    for sch in (plain, streamed(value=0)):
        ll = kiln.build(sch.mod).get_source("ll")
        assert "!nontemporal" not in ll and "fence" not in ll


def test_a_scalar_loop_streams_nothing():
    sch = tir.Schedule(scale())
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.annotate(i, "pragma_nontemporal", 1)
    ll = kiln.build(sch.mod).get_source("ll")
    assert "!nontemporal" not in ll
