"""Bad input to kiln.topi raises kiln's exceptions, whose message names the operator, the
object, what was expected and what was found."""
import pytest

from kiln import KilnIndexError, KilnTypeError, KilnValueError, te, topi


@pytest.fixture
def tensors():
    return {
        "A": te.placeholder((2, 3), name="A"),
        "B": te.placeholder((4,), name="B"),
        "I": te.placeholder((2,), "int32", name="I"),
        "X": te.placeholder((1, 3, 5, 5), name="X"),
        "W": te.placeholder((2, 3, 3, 3), name="W"),
    }


def test_shapes_that_do_not_broadcast(tensors):
    with pytest.raises(KilnValueError, match=r"topi.add: the shapes of A \(2, 3\) and B \(4,\) "
                                             r"do not broadcast: dimension -1 is 3 against 4"):
        topi.add(tensors["A"], tensors["B"])


def test_operand_kinds_and_dtypes(tensors):
    with pytest.raises(KilnTypeError, match="topi.multiply: the second operand must be a "
                                            "te.Tensor, a PrimExpr or a number, found an object "
                                            "of type str"):
        topi.multiply(tensors["A"], "x")
    with pytest.raises(KilnTypeError, match="topi.add: the tensors A and I must have the same "
                                            "dtype, found float32 and int32"):
        topi.add(tensors["A"], tensors["I"])
    with pytest.raises(KilnTypeError, match="topi.exp: x I must have a float dtype, found int32"):
        topi.exp(tensors["I"])
    with pytest.raises(KilnTypeError, match="topi.cast: 'floaty' is not a dtype"):
        topi.cast(tensors["A"], "floaty")


def test_axes_out_of_range(tensors):
    with pytest.raises(KilnIndexError, match=r"topi.sum: axis 2 is out of range for a tensor of "
                                             r"2 dimensions \(expected -2 <= axis < 2\)"):
        topi.sum(tensors["A"], axis=2)
    with pytest.raises(KilnIndexError, match="topi.nn.softmax: axis -3 is out of range"):
        topi.nn.softmax(tensors["A"], axis=-3)
    with pytest.raises(KilnValueError, match=r"topi.transpose: axes \(0, 0\) is not a "
                                             r"permutation of the 2 axes of A"):
        topi.transpose(tensors["A"], (0, 0))
    with pytest.raises(KilnTypeError, match="topi.transpose: axes must be a tuple of ints"):
        topi.transpose(tensors["A"], 1)


def test_transform_shapes(tensors):
    with pytest.raises(KilnValueError, match=r"topi.reshape: cannot reshape A of shape \(2, 3\) "
                                             r"\(6 elements\) to \(4, 2\) \(8 elements\)"):
        topi.reshape(tensors["A"], (4, 2))
    with pytest.raises(KilnValueError, match="topi.split: 2 sections do not divide axis 1 of A"):
        topi.split(tensors["A"], 2, axis=1)
    with pytest.raises(KilnValueError, match="topi.take: mode must be one of 'clip', 'wrap', "
                                             "'fast', found 'raise'"):
        topi.take(tensors["A"], tensors["I"], mode="raise")
    with pytest.raises(KilnTypeError, match="topi.strided_slice: begin must be a list"):
        topi.strided_slice(tensors["A"], 0, 1)


def test_conv2d_layouts_and_shapes(tensors):
    X, W = tensors["X"], tensors["W"]
    with pytest.raises(KilnValueError, match="topi.nn.conv2d: unknown data_layout \"NCWX\"; "
                                             "expected a permutation of N, C, H, W"):
        topi.nn.conv2d(X, W, 1, 0, 1, data_layout="NCWX")
    with pytest.raises(KilnValueError, match="topi.nn.conv2d: unknown kernel_layout \"OIHX\""):
        topi.nn.conv2d(X, W, 1, 0, 1, kernel_layout="OIHX")
    with pytest.raises(KilnValueError, match=r"topi.nn.conv2d: filter K of shape \(2, 4, 3, 3\) "
                                             r"\(OIHW\) does not fit input X"):
        topi.nn.conv2d(X, te.placeholder((2, 4, 3, 3), name="K"), 1, 0, 1)
    with pytest.raises(KilnValueError, match="topi.nn.conv2d: unknown padding \"FULL\""):
        topi.nn.conv2d(X, W, 1, "FULL", 1)
    with pytest.raises(KilnValueError, match="topi.nn.pool2d: pool_type must be one of"):
        topi.nn.pool2d(X, 2, 2, 1, 0, "min")


def test_matmul_and_attention_shapes(tensors):
    with pytest.raises(KilnValueError, match=r"topi.nn.dense: the reduction extents of A "
                                             r"\(shape \(2, 3\)\) and W \(shape \(4, 2\)\) differ"):
        topi.nn.dense(tensors["A"], te.placeholder((4, 2), name="W"))
    q = te.placeholder((1, 3, 2, 4), name="q")
    kv = te.placeholder((1, 2, 2, 4), name="kv")
    with pytest.raises(KilnValueError, match=r"scaled_dot_product_attention: the query heads "
                                             r"\(3\) must be a constant multiple"):
        topi.nn.scaled_dot_product_attention(q, kv, kv)
    with pytest.raises(KilnValueError, match="topi.nn.gelu: approximate must be one of 'none', "
                                             "'tanh', found 'fast'"):
        topi.nn.gelu(tensors["A"], approximate="fast")
    with pytest.raises(KilnValueError, match=r"topi.nn.layer_norm: gamma B must have the shape "
                                             r"of the normalized axes"):
        topi.nn.layer_norm(tensors["A"], tensors["B"], None, axis=-1)


def test_default_schedule_arguments(tensors):
    A = tensors["A"]
    with pytest.raises(KilnTypeError, match="topi.default_schedule: func must be a tir.PrimFunc "
                                            "or the list of te tensors"):
        topi.default_schedule("A")
    with pytest.raises(KilnTypeError, match="topi.default_schedule: target must be a target "
                                            "string such as \"llvm\" or \"cuda\", or a "
                                            "kiln.target.Target, found an object of type int"):
        topi.default_schedule([A, topi.exp(A)], target=80)
    with pytest.raises(KilnValueError, match="-arch must name a CUDA architecture"):
        topi.default_schedule([A, topi.exp(A)], target="cuda -arch=sm_3")
    with pytest.raises(KilnTypeError, match="topi.default_schedule: num_threads must be an int "
                                            "or None, found an object of type float"):
        topi.default_schedule([A, topi.exp(A)], num_threads=2.0)
    with pytest.raises(KilnValueError, match="topi.default_schedule: num_threads must be at "
                                             "least 1, found 0"):
        topi.default_schedule([A, topi.exp(A)], num_threads=0)


def test_gpu_default_schedule_of_a_single_value(tensors):
    """A reduction to one value that GPU threads cannot combine (a guarded sum) has no GPU
    schedule; argmax and a sum to one value and a 0-d element-wise block have one."""
    A = tensors["A"]
    k = [te.reduce_axis((0, int(d)), name=f"k{a}") for a, d in enumerate(A.shape)]
    positive = te.compute((), lambda: te.sum(A[k[0], k[1]], axis=k, where=A[k[0], k[1]] > 0),
                          name="positive")
    with pytest.raises(KilnValueError, match=r"topi.default_schedule: no GPU schedule for block "
                                             r"'positive' on target cuda .*: it reduces to a "
                                             r"single value with an update that GPU threads "
                                             r"cannot combine .* keep an axis"):
        topi.default_schedule([A, positive], target="cuda")
    topi.default_schedule([A, topi.argmax(A)], target="cuda")
    topi.default_schedule([A, topi.argmax(A, keepdims=True)], target="cuda")
    topi.default_schedule([A, topi.sum(A)], target="cuda")
    scalar = te.placeholder((), name="s")
    topi.default_schedule([scalar, topi.exp(scalar)], target="opencl")
