"""Structural equality and hashing from Python: names are ignored, structure is not, free
variables need map_free_vars, assert_structural_equal reports the first difference, and the
hash is the same in separate processes."""
import os
import subprocess
import sys

import pytest

import kiln
from kiln import te, tir
from kiln.ir import assert_structural_equal, structural_equal, structural_hash


def matmul_func(n=128, names=("A", "B", "C"), block="C"):
    A = te.placeholder((n, n), "float32", name=names[0])
    B = te.placeholder((n, n), "float32", name=names[1])
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=block)
    return te.create_prim_func([A, B, C])


def test_free_variables_need_map_free_vars():
    x = tir.Var("x")
    y = tir.Var("x")
    assert structural_equal(x + 1, x + 1)
    assert not structural_equal(x + 1, y + 1)
    assert structural_equal(x + 1, y + 1, map_free_vars=True)
    assert structural_hash(x + 1, map_free_vars=True) == structural_hash(y + 1, map_free_vars=True)
    assert not structural_equal(x * x, x * y, map_free_vars=True)


def test_operand_order_and_dtype_matter():
    x = tir.Var("x")
    assert not structural_equal(x - 1, 1 - x)
    assert structural_hash(x - 1) != structural_hash(1 - x)
    assert not structural_equal(tir.IntImm("int32", 1), tir.IntImm("int64", 1))
    assert not structural_equal(tir.Var("x", "int32"), tir.Var("x", "int64"), map_free_vars=True)


def test_functions_built_twice_are_equal_with_equal_hashes():
    a, b = matmul_func(), matmul_func()
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert_structural_equal(a, b)


def test_buffer_names_are_ignored_block_names_are_not():
    base = matmul_func()
    renamed = matmul_func(names=("X", "Y", "C"))
    assert structural_equal(base, renamed)
    assert structural_hash(base) == structural_hash(renamed)
    other_block = matmul_func(block="D")
    assert not structural_equal(base, other_block)
    assert structural_hash(base) != structural_hash(other_block)


def test_assert_structural_equal_raises_with_the_first_difference():
    with pytest.raises(kiln.KilnValueError) as info:
        assert_structural_equal(matmul_func(128), matmul_func(64))
    message = str(info.value)
    assert message.startswith("assert_structural_equal: the two objects are not structurally "
                              "equal; first difference at root.buffer_map[0].buffer.shape[0]")
    assert "IntImm.value differs: 128 vs 64" in message
    assert "lhs: 128" in message and "rhs: 64" in message


def test_non_nodes_are_a_type_error():
    with pytest.raises(kiln.KilnTypeError, match="structural_hash: node must be an IR node"):
        structural_hash(3)
    assert structural_equal(None, None)


HASH_SCRIPT = """
from kiln import te
from kiln.ir import structural_hash
A = te.placeholder((64, 32), "float32", name="A")
B = te.placeholder((32, 16), "float32", name="B")
k = te.reduce_axis((0, 32), name="k")
C = te.compute((64, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
print(structural_hash(te.create_prim_func([A, B, C])))
"""


def test_hash_is_the_same_in_separate_processes():
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "random"
    outputs = [
        subprocess.run([sys.executable, "-c", HASH_SCRIPT], env=env, check=True,
                       capture_output=True, text=True).stdout
        for _ in range(2)
    ]
    assert outputs[0] == outputs[1]
    assert int(outputs[0]) > 0
