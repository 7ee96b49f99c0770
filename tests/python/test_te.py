"""Structure of the PrimFuncs that te.create_prim_func builds for common operators: blocks, their
iterator kinds, loops, read/write regions, init and update, intermediate buffers."""
import numpy as np
import pytest

from kiln import te, tir
from te_helpers import (block_names, blocks, const_value, extents, iter_kinds, loop_nests,
                        region_buffers, root_block)


def matmul(M=16, N=8, K=32, dtype="float32"):
    A = te.placeholder((M, K), dtype, name="A")
    B = te.placeholder((K, N), dtype, name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def test_tensor_properties():
    A, B, C = matmul()
    assert A.name == "A" and A.dtype == "float32" and A.ndim == 2
    assert [const_value(e) for e in C.shape] == [16, 8]
    assert isinstance(A.op, te.PlaceholderOp)
    assert isinstance(C.op, te.ComputeOp)
    assert C.op.name == "C"
    assert [iv.var.name for iv in C.op.axis] == ["i", "j"]
    assert [iv.var.name for iv in C.op.reduce_axis] == ["k"]
    assert isinstance(C.op.body[0], tir.Reduce)
    assert C.op.input_tensors == [A, B]
    assert isinstance(A[0, 1], tir.BufferLoad)
    assert A[0, 1].buffer.same_as(A.buffer)


def test_axis_names_come_from_fcompute_parameters():
    A = te.placeholder((4, 5), name="A")
    B = te.compute((4, 5), lambda row, col: A[row, col] + 1.0, name="B")
    assert [iv.var.name for iv in B.op.axis] == ["row", "col"]
    C = te.compute((4, 5), lambda *idx: A[idx] * 2.0, name="C")
    assert [iv.var.name for iv in C.op.axis] == ["i", "j"]


def test_matmul():
    A, B, C = matmul()
    func = te.create_prim_func([A, B, C])
    assert len(func.params) == 3
    assert [func.buffer_map[p].name for p in func.params] == ["A", "B", "C"]
    assert func.buffer_map[func.params[0]].same_as(A.buffer)
    assert func.attrs["global_symbol"] == "main"
    [(loops, block)] = loop_nests(func)
    assert [loop.loop_var.name for loop in loops] == ["i", "j", "k"]
    assert extents(loops) == [16, 8, 32]
    assert all(loop.kind == "serial" for loop in loops)
    assert block.name_hint == "C"
    assert iter_kinds(block) == "SSR"
    assert [iv.var.name for iv in block.iter_vars] == ["v_i", "v_j", "v_k"]
    assert region_buffers(block.reads) == ["A", "B"]
    assert region_buffers(block.writes) == ["C"]
    vi, vj, vk = (iv.var for iv in block.iter_vars)
    a_region = block.reads[0].region
    assert a_region[0].min.same_as(vi) and a_region[1].min.same_as(vk)
    assert all(const_value(r.extent) == 1 for r in a_region)
    assert isinstance(block.init, tir.BufferStore) and const_value(block.init.value) == 0.0
    update = block.body
    assert isinstance(update, tir.BufferStore) and update.buffer.same_as(C.buffer)
    assert isinstance(update.value, tir.Add)
    assert isinstance(update.value.a, tir.BufferLoad) and update.value.a.buffer.same_as(C.buffer)
    assert isinstance(update.value.b, tir.Mul)


MATMUL_SCRIPT = """\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j, k in T.grid(16, 8, 32):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C[v_i, v_j])
            with T.init():
                C[v_i, v_j] = T.float32(0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]"""


def test_matmul_prints_as_golden_script():
    assert str(te.create_prim_func(list(matmul()))).strip() == MATMUL_SCRIPT


def test_batched_matmul():
    Bn, M, N, K = 2, 8, 4, 16
    X = te.placeholder((Bn, M, K), name="X")
    Y = te.placeholder((Bn, K, N), name="Y")
    k = te.reduce_axis((0, K), name="k")
    Z = te.compute((Bn, M, N), lambda b, i, j: te.sum(X[b, i, k] * Y[b, k, j], axis=k), name="Z")
    func = te.create_prim_func([X, Y, Z])
    [(loops, block)] = loop_nests(func)
    assert extents(loops) == [2, 8, 4, 16]
    assert iter_kinds(block) == "SSSR"
    assert region_buffers(block.reads) == ["X", "Y"]


def conv2d_nchw(N=1, C=3, H=8, W=8, F=4, R=3, pad=1, stride=1):
    A = te.placeholder((N, C, H, W), name="A")
    Wt = te.placeholder((F, C, R, R), name="W")
    Hp, Wp = H + 2 * pad, W + 2 * pad
    Apad = te.compute(
        (N, C, Hp, Wp),
        lambda n, c, h, w: te.if_then_else(
            te.all(h >= pad, h < H + pad, w >= pad, w < W + pad), A[n, c, h - pad, w - pad], 0.0),
        name="pad")
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, R), name="rx")
    Ho, Wo = (Hp - R) // stride + 1, (Wp - R) // stride + 1
    Out = te.compute(
        (N, F, Ho, Wo),
        lambda n, f, y, x: te.sum(
            Apad[n, rc, y * stride + ry, x * stride + rx] * Wt[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv")
    return A, Wt, Apad, Out


def test_conv2d_nchw_with_padding_stage():
    A, Wt, Apad, Out = conv2d_nchw()
    func = te.create_prim_func([A, Wt, Out])
    assert block_names(func) == ["pad", "conv"]
    root = root_block(func)
    assert [b.name for b in root.alloc_buffers] == ["pad"]
    assert root.alloc_buffers[0].same_as(Apad.buffer)
    b = blocks(func)
    assert iter_kinds(b["pad"]) == "SSSS"
    pad_value = b["pad"].body.value
    assert isinstance(pad_value, tir.Call) and pad_value.op == "if_then_else"
    assert region_buffers(b["pad"].reads) == ["A"]
    assert iter_kinds(b["conv"]) == "SSSSRRR"
    assert region_buffers(b["conv"].reads) == ["pad", "W"]
    loops, _ = loop_nests(func)[1]
    assert extents(loops) == [1, 4, 8, 8, 3, 3, 3]


def test_depthwise_conv2d():
    N, C, H, W, R = 1, 4, 6, 6, 3
    A = te.placeholder((N, C, H, W), name="A")
    K = te.placeholder((C, 1, R, R), name="K")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, R), name="rx")
    Out = te.compute(
        (N, C, H - R + 1, W - R + 1),
        lambda n, c, y, x: te.sum(A[n, c, y + ry, x + rx] * K[c, 0, ry, rx], axis=[ry, rx]),
        name="depthwise")
    func = te.create_prim_func([A, K, Out])
    [(loops, block)] = loop_nests(func)
    assert iter_kinds(block) == "SSSSRR"
    assert extents(loops) == [1, 4, 4, 4, 3, 3]
    assert region_buffers(block.reads) == ["A", "K"]


def softmax(M=4, N=10):
    A = te.placeholder((M, N), name="A")
    k1 = te.reduce_axis((0, N), name="k1")
    mx = te.compute((M,), lambda i: te.max(A[i, k1], axis=k1), name="max")
    k2 = te.reduce_axis((0, N), name="k2")
    es = te.compute((M,), lambda i: te.sum(te.exp(A[i, k2] - mx[i]), axis=k2), name="expsum")
    out = te.compute((M, N), lambda i, j: te.exp(A[i, j] - mx[i]) / es[i], name="softmax")
    return A, mx, es, out


def test_softmax_in_three_blocks():
    A, mx, es, out = softmax()
    func = te.create_prim_func([A, out])
    assert block_names(func) == ["max", "expsum", "softmax"]
    assert [b.name for b in root_block(func).alloc_buffers] == ["max", "expsum"]
    b = blocks(func)
    assert iter_kinds(b["max"]) == "SR"
    assert const_value(b["max"].init.value) == float(np.finfo(np.float32).min)
    assert isinstance(b["max"].body.value, tir.Max)
    assert region_buffers(b["expsum"].reads) == ["A", "max"]
    assert iter_kinds(b["softmax"]) == "SS"
    assert region_buffers(b["softmax"].reads) == ["A", "max", "expsum"]
    assert b["softmax"].init is None


def test_layer_norm():
    M, N, eps = 4, 8, 1e-5
    X = te.placeholder((M, N), name="X")
    gamma = te.placeholder((N,), name="gamma")
    beta = te.placeholder((N,), name="beta")
    k = te.reduce_axis((0, N), name="k")
    mean = te.compute((M,), lambda i: te.sum(X[i, k], axis=k) , name="sum")
    k2 = te.reduce_axis((0, N), name="k2")
    var = te.compute((M,), lambda i: te.sum((X[i, k2] - mean[i] / N) * (X[i, k2] - mean[i] / N),
                                            axis=k2), name="sqsum")
    Y = te.compute(
        (M, N),
        lambda i, j: (X[i, j] - mean[i] / N) * te.rsqrt(var[i] / N + eps) * gamma[j] + beta[j],
        name="layer_norm")
    func = te.create_prim_func([X, gamma, beta, Y])
    assert block_names(func) == ["sum", "sqsum", "layer_norm"]
    b = blocks(func)
    assert region_buffers(b["layer_norm"].reads) == ["X", "sum", "sqsum", "gamma", "beta"]
    assert iter_kinds(b["sqsum"]) == "SR"


def test_rms_norm():
    M, N, eps = 4, 8, 1e-6
    X = te.placeholder((M, N), name="X")
    Wt = te.placeholder((N,), name="W")
    k = te.reduce_axis((0, N), name="k")
    ss = te.compute((M,), lambda i: te.sum(X[i, k] * X[i, k], axis=k), name="sumsq")
    Y = te.compute((M, N), lambda i, j: X[i, j] * te.rsqrt(ss[i] / N + eps) * Wt[j], name="rms")
    func = te.create_prim_func([X, Wt, Y])
    b = blocks(func)
    assert block_names(func) == ["sumsq", "rms"]
    assert region_buffers(b["sumsq"].reads) == ["X"]
    assert len(b["sumsq"].reads[0].region) == 2
    assert region_buffers(b["rms"].reads) == ["X", "sumsq", "W"]


def test_int8_dot_product_accumulates_in_int32():
    N = 64
    A = te.placeholder((N,), "int8", name="A")
    B = te.placeholder((N,), "int8", name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((1,), lambda i: te.sum(A[k].astype("int32") * B[k].astype("int32"), axis=k),
                   name="dot")
    assert C.dtype == "int32"
    func = te.create_prim_func([A, B, C])
    [(_, block)] = loop_nests(func)
    assert block.init.value.dtype == "int32"
    assert const_value(block.init.value) == 0
    source = block.body.value.b
    assert isinstance(source, tir.Mul) and isinstance(source.a, tir.Cast)


def test_fused_elementwise_chain_in_one_block():
    A = te.placeholder((16, 4), name="A")
    B = te.compute((16, 4), lambda i, j: te.sin(A[i, j]) + te.cos(A[i, j]), name="B")
    func = te.create_prim_func([A, B])
    [(_, block)] = loop_nests(func)
    assert iter_kinds(block) == "SS"
    [read] = block.reads
    assert read.buffer.name == "A"
    assert all(const_value(r.extent) == 1 for r in read.region)
    value = block.body.value
    assert isinstance(value, tir.Add) and value.a.op == "sin" and value.b.op == "cos"


def test_stencil_reads_a_covering_region():
    A = te.placeholder((10,), name="A")
    B = te.compute((8,), lambda i: A[i] + A[i + 1] + A[i + 2], name="B")
    func = te.create_prim_func([A, B])
    [(_, block)] = loop_nests(func)
    [region] = block.reads[0].region
    assert region.min.same_as(block.iter_vars[0].var)
    assert const_value(region.extent) == 3


def argmax_reducer():
    def fcombine(x, y):
        keep = x[1] >= y[1]
        return tir.Select(keep, x[0], y[0]), tir.Select(keep, x[1], y[1])

    def fidentity(t0, t1):
        return te.const(-1, t0), te.min_value(t1)

    return te.comm_reducer(fcombine, fidentity, name="argmax")


def test_argmax_with_a_tuple_reducer():
    M, N = 4, 6
    A = te.placeholder((M, N), name="A")
    k = te.reduce_axis((0, N), name="k")
    argmax = argmax_reducer()
    idx, val = te.compute((M,), lambda i: argmax((k.var, A[i, k]), axis=k), name="argmax")
    assert idx.dtype == "int32" and val.dtype == "float32"
    assert idx.op == val.op and (idx.value_index, val.value_index) == (0, 1)
    func = te.create_prim_func([A, idx, val])
    [(_, block)] = loop_nests(func)
    assert iter_kinds(block) == "SR"
    assert region_buffers(block.writes) == ["argmax_v0", "argmax_v1"]
    assert len(block.init.seq) == 2
    assert const_value(block.init.seq[0].value) == -1
    let0 = block.body
    assert isinstance(let0, tir.LetStmt) and isinstance(let0.body, tir.LetStmt)
    stores = let0.body.body
    assert [s.buffer.name for s in stores.seq] == ["argmax_v0", "argmax_v1"]


def test_symbolic_shapes():
    n = te.var("n")
    m = te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    assert len(func.params) == 2
    [(loops, block)] = loop_nests(func)
    assert loops[0].extent.same_as(n) and loops[1].extent.same_as(m)
    assert block.iter_vars[0].dom.extent.same_as(n)


def test_scalar_parameter_in_the_argument_list():
    A = te.placeholder((8,), name="A")
    alpha = te.var("alpha", "float32")
    B = te.compute((8,), lambda i: A[i] * alpha, name="B")
    func = te.create_prim_func([A, B, alpha])
    assert func.params[2].same_as(alpha)
    assert len(func.buffer_map) == 2


def test_where_guards_the_update():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k, where=k <= i), name="tri")
    func = te.create_prim_func([A, B])
    [(_, block)] = loop_nests(func)
    assert isinstance(block.body, tir.IfThenElse)
    assert isinstance(block.body.condition, tir.LE)


def test_sum_with_init():
    A = te.placeholder((4, 8), name="A")
    Bias = te.placeholder((4,), name="bias")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k, init=Bias[i]), name="B")
    func = te.create_prim_func([A, Bias, B])
    [(_, block)] = loop_nests(func)
    assert isinstance(block.init.value, tir.BufferLoad)
    assert block.init.value.buffer.name == "bias"
    assert region_buffers(block.reads) == ["A", "bias"]


def test_compute_attrs_become_block_annotations():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B", tag="elemwise",
                   attrs={"schedule_rule": "none"})
    assert B.op.tag == "elemwise" and B.op.attrs == {"schedule_rule": "none"}
    [(_, block)] = loop_nests(te.create_prim_func([A, B]))
    assert block.annotations == {"schedule_rule": "none"}


def test_elementwise_max_and_min():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: te.max(A[i], 0.0), name="relu")
    assert isinstance(B.op.body[0], tir.Max)
    C = te.compute((4,), lambda i: te.min(A[i], B[i]), name="C")
    assert isinstance(C.op.body[0], tir.Min)


def test_prod_and_min_reductions():
    A = te.placeholder((4, 3), name="A")
    k = te.reduce_axis((0, 3), name="k")
    P = te.compute((4,), lambda i: te.prod(A[i, k], axis=k), name="P")
    k2 = te.reduce_axis((0, 3), name="k2")
    Mn = te.compute((4,), lambda i: te.min(A[i, k2], axis=k2), name="Mn")
    b = blocks(te.create_prim_func([A, P, Mn]))
    assert const_value(b["P"].init.value) == 1.0
    assert const_value(b["Mn"].init.value) == float(np.finfo(np.float32).max)


def test_helpers():
    x = te.var("x", "float32")
    assert te.exp(x).op == "exp"
    assert te.exp(1).dtype == "float32"
    assert te.power(x, 2).op == "pow"
    assert te.isnan(x).dtype == "bool"
    assert te.const(1).dtype == "int32"
    assert te.const(1.5).dtype == "float32"
    assert te.const(2, "int8").dtype == "int8"
    i = te.var("i")
    assert isinstance(te.floordiv(i, 4), tir.FloorDiv)
    assert isinstance(te.floormod(7, i), tir.FloorMod)
    assert isinstance(te.truncdiv(i, 2), tir.Div)
    assert isinstance(te.truncmod(i, 2), tir.Mod)
    assert isinstance(te.all(i > 0, i < 4, i != 2), tir.And)
    assert isinstance(te.any(i < 0, i > 4), tir.Or)
    assert const_value(te.max_value("int8")) == 127
    assert const_value(te.min_value("uint8")) == 0
    # Floats: the lowest and largest finite values, as in TVM.
    assert const_value(te.min_value("float32")) == float(np.finfo(np.float32).min)
    assert const_value(te.max_value("float32")) == float(np.finfo(np.float32).max)
    assert const_value(te.min_value("float16")) == float(np.finfo(np.float16).min)
    assert const_value(te.max_value("float64")) == float(np.finfo(np.float64).max)
    e = te.if_then_else(i > 0, x, 0)
    assert e.op == "if_then_else" and e.dtype == "float32"


def test_itervar_arithmetic():
    k = te.reduce_axis((0, 4), name="k")
    assert isinstance(k + 1, tir.Add) and isinstance(1 + k, tir.Add)
    assert isinstance(k * 2 - 1, tir.Sub)
    assert isinstance(k < 3, tir.LT)
    assert (k + 1).a.same_as(k.var)
    assert k.dtype == "int32"


def test_intermediate_used_twice_is_computed_once():
    A = te.placeholder((4,), name="A")
    T = te.compute((4,), lambda i: A[i] * 2.0, name="T")
    B = te.compute((4,), lambda i: T[i] + 1.0, name="B")
    C = te.compute((4,), lambda i: T[i] + B[i], name="C")
    func = te.create_prim_func([A, C])
    assert block_names(func) == ["T", "B", "C"]


def test_tensor_identity():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    assert B.op.input_tensors[0] == A
    assert hash(B.op.input_tensors[0]) == hash(A)
    assert A != B
    assert {A: 1}[B.op.input_tensors[0]] == 1


if __name__ == "__main__":
    pytest.main([__file__])
