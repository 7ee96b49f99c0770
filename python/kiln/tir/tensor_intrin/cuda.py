"""CUDA tensor-core intrinsics (mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 and its
.bf16.bf16 form, sm_80 or newer): their names, and the layout of their fragments for
Schedule.transform_layout.

A warp multiplies 16x16 float16 (or bfloat16) tiles into a 16x16 float32 accumulator held in its
registers (both element types have the same fragment layout). A
tile lives in a "warp" buffer as [32, 8]: lane l (threadIdx.x) holds the 8 elements the PTX ISA
gives thread l in the operands of two mma.m16n8k16 (fragment_layout). A schedule puts the tiles
of A, of B and of the accumulator into "warp" buffers (cache_read / cache_write), gives those
the fragment layout (fragment_index_map), and tensorizes the copies and the update with the
intrinsics of get_mma_intrin_group; the implementations loop over the 32 lanes bound to
threadIdx.x, so the kernel launches threadIdx.x = 32 and spreads warps over threadIdx.y."""

from ...error import KilnTypeError, KilnValueError
from .. import PrimExpr

LOAD_16x16_F16_A = "cuda.mma_load_16x16_f16_a"
LOAD_16x16_F16_B = "cuda.mma_load_16x16_f16_b"
LOAD_16x16_F16_B_TRANS = "cuda.mma_load_16x16_f16_b_trans"
LDMATRIX_16x16_F16_A = "cuda.mma_ldmatrix_16x16_f16_a"
LDMATRIX_16x16_F16_B = "cuda.mma_ldmatrix_16x16_f16_b"
LDMATRIX_16x16_F16_B_TRANS = "cuda.mma_ldmatrix_16x16_f16_b_trans"
MMA_F16F16F32 = "cuda.mma_f16f16f32"
MMA_F16F16F32_REFERENCE = "cuda.mma_f16f16f32_reference"
LOAD_16x16_BF16_A = "cuda.mma_load_16x16_bf16_a"
LOAD_16x16_BF16_B = "cuda.mma_load_16x16_bf16_b"
LOAD_16x16_BF16_B_TRANS = "cuda.mma_load_16x16_bf16_b_trans"
LDMATRIX_16x16_BF16_A = "cuda.mma_ldmatrix_16x16_bf16_a"
LDMATRIX_16x16_BF16_B = "cuda.mma_ldmatrix_16x16_bf16_b"
LDMATRIX_16x16_BF16_B_TRANS = "cuda.mma_ldmatrix_16x16_bf16_b_trans"
MMA_BF16BF16F32 = "cuda.mma_bf16bf16f32"
MMA_BF16BF16F32_REFERENCE = "cuda.mma_bf16bf16f32_reference"
MMA_FILL_16x16_F32 = "cuda.mma_fill_16x16_f32"
MMA_STORE_16x16_F32 = "cuda.mma_store_16x16_f32"


def _check_indices(api, **indices):
    for name, value in indices.items():
        if isinstance(value, bool) or not isinstance(value, (int, PrimExpr)):
            raise KilnTypeError(f"{api}: {name} must be an int or an integer PrimExpr, found an "
                                f"object of type {type(value).__name__}")


def fragment_layout(row, col):
    """Where element (row, col) of a 16x16 tile lives in its [32, 8] fragment.

    Rows 0-7 and 8-15, columns 0-7 and 8-15 are the four 8x8 quarters that the PTX ISA's
    registers a0..a3 of A (and b0, b1 of each 8 columns of B as [N, K]) hold in this order:
    lane (row % 8) * 4 + (col % 8) // 2 holds two neighbouring columns of each quarter.

    Args:
        row (int or PrimExpr): the row (of the tile: taken modulo 16).
        col (int or PrimExpr): the column (taken modulo 16).

    Returns:
        list: [lane, element], lane in [0, 32) and element in [0, 8).

    Raises:
        KilnTypeError: row or col is not an int or a PrimExpr.
    """
    _check_indices("fragment_layout", row=row, col=col)
    return [row % 8 * 4 + col % 8 // 2, col % 16 // 8 * 4 + row % 16 // 8 * 2 + col % 2]


def fragment_index_map(i, j):
    """The layout of a "warp" buffer of shape [M, N] that holds 16x16 fragments: element (i, j)
    goes to [i // 16, j // 16, lane, element] (fragment_layout of i % 16, j % 16). For
    Schedule.transform_layout of the fragments of A as [M, K], of B as [N, K] and of the
    accumulator as [M, N].

    Args:
        i (PrimExpr): the first index.
        j (PrimExpr): the second index.

    Returns:
        list: the four new indices.

    Raises:
        KilnTypeError: i or j is not an int or a PrimExpr.
    """
    _check_indices("fragment_index_map", i=i, j=j)
    return [i // 16, j // 16] + fragment_layout(i, j)


def fragment_index_map_trans(k, n):
    """The layout of a "warp" buffer of shape [K, N] that holds the fragments of B stored as
    [K, N]: element (k, n) goes to [k // 16, n // 16, lane, element] of the tile of B as [N, K]
    (fragment_layout of n % 16, k % 16), as cuda.mma_load_16x16_f16_b loads it.

    Args:
        k (PrimExpr): the first index (along K).
        n (PrimExpr): the second index (along N).

    Returns:
        list: the four new indices.

    Raises:
        KilnTypeError: k or n is not an int or a PrimExpr.
    """
    _check_indices("fragment_index_map_trans", k=k, n=n)
    return [k // 16, n // 16] + fragment_layout(n, k)


_ELEMENTS = {"float16": "f16", "bfloat16": "bf16"}


def get_mma_intrin_group(trans_b=True, reference=False, ldmatrix=False, dtype="float16"):
    """The intrinsics a tensor-core GEMM tensorizes with, by role, as TVM's function of this name.

    Args:
        trans_b (bool): B is stored as [N, K] (C = A B^T, as topi.nn.dense); False: as [K, N].
        reference (bool): compute with cuda.mma_f16f16f32_reference (or the bfloat16 one), the
            multiply-accumulate in plain per-lane code that any GPU target and the interpreter
            run (to check a schedule where no sm_80 GPU is at hand), instead of mma.sync.
        ldmatrix (bool): load the fragments of A and B with one ldmatrix.x4 per lane and tile
            (cuda.mma_ldmatrix_16x16_f16_*, sm_75 or newer; the rows of the shared tile must be
            16-byte aligned) instead of element by element. The same descriptions: a schedule
            tensorized with them is checked on the interpreter with the plain loads.
        dtype (str): the element type of A and B, "float16" (cuda.mma_f16f16f32) or "bfloat16"
            (cuda.mma_bf16bf16f32); the accumulator is float32 either way.

    Returns:
        dict: {"init", "load_a", "load_b", "compute", "store"} to intrinsic names.

    Raises:
        KilnTypeError: trans_b, reference or ldmatrix is not a bool, or dtype not a str.
        KilnValueError: dtype is neither "float16" nor "bfloat16".
    """
    for name, value in (("trans_b", trans_b), ("reference", reference), ("ldmatrix", ldmatrix)):
        if not isinstance(value, bool):
            raise KilnTypeError(f"get_mma_intrin_group: {name} must be a bool, found an object "
                                f"of type {type(value).__name__}")
    if not isinstance(dtype, str):
        raise KilnTypeError("get_mma_intrin_group: dtype must be a str (\"float16\" or "
                            f"\"bfloat16\"), found an object of type {type(dtype).__name__}")
    if dtype not in _ELEMENTS:
        raise KilnValueError("get_mma_intrin_group: dtype must be \"float16\" or \"bfloat16\" "
                             f"(the tensor cores' operand types), found {dtype!r}")
    element = _ELEMENTS[dtype]
    load = "ldmatrix" if ldmatrix else "load"
    compute = f"cuda.mma_{element}{element}f32" + ("_reference" if reference else "")
    return {"init": MMA_FILL_16x16_F32,
            "load_a": f"cuda.mma_{load}_16x16_{element}_a",
            "load_b": f"cuda.mma_{load}_16x16_{element}_" + ("b_trans" if trans_b else "b"),
            "compute": compute,
            "store": MMA_STORE_16x16_F32}


__all__ = ["LOAD_16x16_F16_A", "LOAD_16x16_F16_B", "LOAD_16x16_F16_B_TRANS",
           "LDMATRIX_16x16_F16_A", "LDMATRIX_16x16_F16_B", "LDMATRIX_16x16_F16_B_TRANS",
           "MMA_F16F16F32",
           "MMA_F16F16F32_REFERENCE", "LOAD_16x16_BF16_A", "LOAD_16x16_BF16_B",
           "LOAD_16x16_BF16_B_TRANS", "LDMATRIX_16x16_BF16_A", "LDMATRIX_16x16_BF16_B",
           "LDMATRIX_16x16_BF16_B_TRANS", "MMA_BF16BF16F32", "MMA_BF16BF16F32_REFERENCE",
           "MMA_FILL_16x16_F32", "MMA_STORE_16x16_F32",
           "fragment_layout", "fragment_index_map", "fragment_index_map_trans",
           "get_mma_intrin_group"]
