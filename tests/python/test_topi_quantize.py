"""kiln.topi.nn.quantize and dequantize against NumPy: per-tensor and per-channel scale and zero
point, rounding half to even, saturation to int8/uint8, and the round trip."""
import numpy as np

from kiln import te, topi
from topi_helpers import check


def quantize_ref(x, scale, zero, low, high):
    return np.clip(np.round(x.astype("float32") / scale) + zero, low, high)


def test_per_tensor_rounds_half_to_even_and_saturates():
    X = te.placeholder((8,), name="X")
    x = np.array([0.25, 0.75, -0.25, -0.75, 1.25, 100.0, -100.0, 0.1], "float32")
    check([X], topi.nn.quantize(X, 0.5, 0), [x], quantize_ref(x, 0.5, 0, -128, 127))
    check([X], topi.nn.quantize(X, 0.5, 3, out_dtype="uint8"), [x],
          quantize_ref(x, 0.5, 3, 0, 255))


def test_per_channel_parameters_and_round_trip():
    n = te.var("n")
    X = te.placeholder((n, 3), name="X")
    S = te.placeholder((3,), name="S")
    Z = te.placeholder((3,), "int32", name="Z")
    x = np.random.default_rng(6).uniform(-4, 4, size=(5, 3)).astype("float32")
    s = np.array([0.05, 0.1, 0.02], "float32")
    z = np.array([0, -3, 10], "int32")
    q_ref = quantize_ref(x, s, z, -128, 127).astype("int8")
    check([X, S, Z], topi.nn.quantize(X, S, Z, axis=1), [x, s, z], q_ref)
    Q = te.placeholder((n, 3), "int8", name="Q")
    check([Q, S, Z], topi.nn.dequantize(Q, S, Z, axis=-1), [q_ref, s, z],
          (q_ref.astype("int32") - z) * s.astype("float64"), rtol=1e-6)
    scalar = te.placeholder((1,), name="scale")
    check([X, scalar], topi.nn.quantize(X, scalar, 0), [x, np.array([0.05], "float32")],
          quantize_ref(x, np.float32(0.05), 0, -128, 127), interpret=True)
