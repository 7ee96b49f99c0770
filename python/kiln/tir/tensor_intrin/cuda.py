"""CUDA tensor-core intrinsics (mma.sync.aligned.m16n8k16 on float16 or bfloat16 operands into
float32, m16n8k32 on int8 or uint8 x int8 operands into int32; sm_80 or newer): their names, and
the layout of their fragments for Schedule.transform_layout.

A warp multiplies 16x16 float16 (or bfloat16) tiles, or 16x32 int8 tiles, into a 16x16 float32
(int32) accumulator held in its registers. A tile lives in a "warp" buffer: lane l
(threadIdx.x) holds the elements the PTX ISA gives thread l in the operands of two mma.sync
(fragment_layout): [32, 8] for 16-bit elements and the accumulators, [32, 16] for 8-bit ones. A
schedule puts the tiles of A, of B and of the accumulator into "warp" buffers (cache_read /
cache_write), gives those the fragment layout (fragment_index_map), and tensorizes the copies and
the update with the intrinsics of get_mma_intrin_group (fragment_index_map_8bit for 8-bit
operands); the implementations loop over the 32
lanes bound to threadIdx.x, so the kernel launches threadIdx.x = 32 and spreads warps over
threadIdx.y."""

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
LOAD_16x32_S8_A = "cuda.mma_load_16x32_s8_a"
LOAD_16x32_U8_A = "cuda.mma_load_16x32_u8_a"
LOAD_16x32_S8_B_TRANS = "cuda.mma_load_16x32_s8_b_trans"
LOAD_32x16_S8_B = "cuda.mma_load_32x16_s8_b"
LDMATRIX_16x32_S8_A = "cuda.mma_ldmatrix_16x32_s8_a"
LDMATRIX_16x32_U8_A = "cuda.mma_ldmatrix_16x32_u8_a"
LDMATRIX_16x32_S8_B_TRANS = "cuda.mma_ldmatrix_16x32_s8_b_trans"
MMA_S8S8S32 = "cuda.mma_s8s8s32"
MMA_S8S8S32_REFERENCE = "cuda.mma_s8s8s32_reference"
MMA_U8S8S32 = "cuda.mma_u8s8s32"
MMA_U8S8S32_REFERENCE = "cuda.mma_u8s8s32_reference"
MMA_FILL_16x16_S32 = "cuda.mma_fill_16x16_s32"
MMA_STORE_16x16_S32 = "cuda.mma_store_16x16_s32"

# The element groups of a lane's row (g) per element type: a tile has 16 rows, 8 g columns.
_GROUPS = {"float16": 2, "bfloat16": 2, "float32": 2, "int32": 2, "int8": 4, "uint8": 4}


def _check_indices(api, **indices):
    for name, value in indices.items():
        if isinstance(value, bool) or not isinstance(value, (int, PrimExpr)):
            raise KilnTypeError(f"{api}: {name} must be an int or an integer PrimExpr, found an "
                                f"object of type {type(value).__name__}")


def _group(api, dtype):
    if not isinstance(dtype, str):
        raise KilnTypeError(f"{api}: dtype must be a str, found an object of type "
                            f"{type(dtype).__name__}")
    if dtype not in _GROUPS:
        raise KilnValueError(f"{api}: dtype must be one of {', '.join(_GROUPS)} (the tensor "
                             f"cores' operand and accumulator types), found {dtype!r}")
    return _GROUPS[dtype]


def fragment_layout(row, col, dtype="float16"):
    """Where element (row, col) of a tile lives in its fragment: a 16x16 tile of float16,
    bfloat16 or of the accumulator in [32, 8], a 16x32 tile of int8 or uint8 in [32, 16].

    A lane holds its row's elements in groups of g neighbours (one 32-bit register: g = 2 for
    16-bit elements and the accumulators, 4 for 8-bit ones): lane (row % 8) * 4 +
    (col % (4 g)) // g holds one group of each quarter of the tile (rows 0-7 and 8-15, the first
    and last 4 g columns), which the PTX ISA's registers a0..a3 of A (and b0, b1 of each 8
    columns of B as [N, K]) hold in this order.

    Args:
        row (int or PrimExpr): the row (of the tile: taken modulo 16).
        col (int or PrimExpr): the column (taken modulo 8 g).
        dtype (str): the tile's element type.

    Returns:
        list: [lane, element], lane in [0, 32) and element in [0, 4 g).

    Raises:
        KilnTypeError: row or col is not an int or a PrimExpr, or dtype not a str.
        KilnValueError: dtype is not a type of the tensor cores.
    """
    _check_indices("fragment_layout", row=row, col=col)
    g = _group("fragment_layout", dtype)
    return [row % 8 * 4 + col % (4 * g) // g,
            col % (8 * g) // (4 * g) * (2 * g) + row % 16 // 8 * g + col % g]


def _index_map(api, i, j, dtype):
    _check_indices(api, i=i, j=j)
    g = _GROUPS[dtype]
    return [i // 16, j // (8 * g)] + fragment_layout(i, j, dtype)


def _index_map_trans(api, k, n, dtype):
    _check_indices(api, k=k, n=n)
    g = _GROUPS[dtype]
    return [k // (8 * g), n // 16] + fragment_layout(n, k, dtype)


def fragment_index_map(i, j):
    """The layout of a "warp" buffer of shape [M, N] that holds whole 16x16 tiles of 16-bit
    elements or of the accumulator: element (i, j) goes to [i // 16, j // 16, lane, element]
    (fragment_layout of i % 16, j % 16). For Schedule.transform_layout of the fragments of A as
    [M, K], of B as [N, K] and of the accumulator as [M, N].

    Args:
        i (PrimExpr): the first index.
        j (PrimExpr): the second index.

    Returns:
        list: the four new indices.

    Raises:
        KilnTypeError: i or j is not an int or a PrimExpr.
    """
    return _index_map("fragment_index_map", i, j, "float16")


def fragment_index_map_8bit(i, j):
    """fragment_index_map for 16x32 tiles of int8 or uint8 operands: element (i, j) of A as
    [M, K] or B as [N, K] goes to [i // 16, j // 32, lane, element] (fragment_layout of i % 16,
    j % 32 for 8-bit elements); the accumulator keeps fragment_index_map.

    Raises:
        KilnTypeError: i or j is not an int or a PrimExpr.
    """
    return _index_map("fragment_index_map_8bit", i, j, "int8")


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
    return _index_map_trans("fragment_index_map_trans", k, n, "float16")


def fragment_index_map_trans_8bit(k, n):
    """fragment_index_map_trans for an int8 B stored as [K, N]: element (k, n) goes to
    [k // 32, n // 16] and the lane and element of (n, k) in a 16x32 tile, as
    cuda.mma_load_32x16_s8_b loads it.

    Raises:
        KilnTypeError: k or n is not an int or a PrimExpr.
    """
    return _index_map_trans("fragment_index_map_trans_8bit", k, n, "int8")


_ELEMENTS = {"float16": ("f16", "f16", "f32"), "bfloat16": ("bf16", "bf16", "f32"),
             "int8": ("s8", "s8", "s32"), "uint8": ("u8", "s8", "s32")}


def get_mma_intrin_group(trans_b=True, reference=False, ldmatrix=False, dtype="float16"):
    """The intrinsics a tensor-core GEMM tensorizes with, by role, as TVM's function of this name.

    Args:
        trans_b (bool): B is stored as [N, K] (C = A B^T, as topi.nn.dense); False: as [K, N].
        reference (bool): compute with the plain-code reference of the multiply-accumulate
            (cuda.mma_f16f16f32_reference, ...), which any GPU target and the interpreter run (to
            check a schedule where no sm_80 GPU is at hand), instead of mma.sync.
        ldmatrix (bool): load the fragments of A and B with one ldmatrix.x4 per lane and tile
            (cuda.mma_ldmatrix_*, sm_75 or newer; the rows of the shared tile must be 16-byte
            aligned) instead of element by element. The same descriptions: a schedule
            tensorized with them is checked on the interpreter with the plain loads. An int8 B
            stored as [K, N] has no ldmatrix (8-bit elements have no .trans): it keeps the
            element-wise load.
        dtype (str): the element type of A: "float16" (cuda.mma_f16f16f32), "bfloat16"
            (cuda.mma_bf16bf16f32), both with B of the same type into float32; "int8"
            (cuda.mma_s8s8s32) or "uint8" (cuda.mma_u8s8s32), B int8, into int32.

    Returns:
        dict: {"init", "load_a", "load_b", "compute", "store"} to intrinsic names.

    Raises:
        KilnTypeError: trans_b, reference or ldmatrix is not a bool, or dtype not a str.
        KilnValueError: dtype is not one of the four.
    """
    for name, value in (("trans_b", trans_b), ("reference", reference), ("ldmatrix", ldmatrix)):
        if not isinstance(value, bool):
            raise KilnTypeError(f"get_mma_intrin_group: {name} must be a bool, found an object "
                                f"of type {type(value).__name__}")
    if not isinstance(dtype, str):
        raise KilnTypeError("get_mma_intrin_group: dtype must be a str (\"float16\", "
                            "\"bfloat16\", \"int8\" or \"uint8\"), found an object of type "
                            f"{type(dtype).__name__}")
    if dtype not in _ELEMENTS:
        raise KilnValueError("get_mma_intrin_group: dtype must be \"float16\", \"bfloat16\", "
                             "\"int8\" or \"uint8\" (the tensor cores' operand types), found "
                             f"{dtype!r}")
    a, b, acc = _ELEMENTS[dtype]
    k = 32 if a in ("s8", "u8") else 16
    load = "ldmatrix" if ldmatrix else "load"
    load_b = f"cuda.mma_{load}_16x{k}_{b}_b_trans" if trans_b else \
        f"cuda.mma_{'load' if k == 32 else load}_{k}x16_{b}_b"
    return {"init": f"cuda.mma_fill_16x16_{acc}",
            "load_a": f"cuda.mma_{load}_16x{k}_{a}_a",
            "load_b": load_b,
            "compute": f"cuda.mma_{a}{b}{acc}" + ("_reference" if reference else ""),
            "store": f"cuda.mma_store_16x16_{acc}"}


__all__ = [name for name in dir() if name.isupper() and name.startswith(("LOAD", "LDMATRIX",
                                                                       "MMA"))] + [
    "fragment_layout", "fragment_index_map", "fragment_index_map_trans",
    "fragment_index_map_8bit", "fragment_index_map_trans_8bit", "get_mma_intrin_group"]
