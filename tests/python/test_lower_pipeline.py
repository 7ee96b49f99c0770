"""kiln.tir.lower: every te operator lowers to a program that computes the same results on the
reference interpreter and meets the code generators' input contract (no blocks, one index per
access, one-dimensional allocations); dump_ir writes one file per pass, "(unchanged)" where a
pass did nothing; lowering a module lowers each function, and lowering a tir.Schedule lowers its
module."""
import os
import re

import pytest

import kiln
from kiln import IRModule, tir

from lower_helpers import OPERATORS, assert_same_results, walk


def assert_codegen_contract(func):
    for node in walk(func.body):
        assert not isinstance(node, (tir.Block, tir.BlockRealize, tir.Reduce)), func.script()
        if isinstance(node, (tir.BufferLoad, tir.BufferStore)):
            assert len(node.indices) == 1, func.script()
        if isinstance(node, tir.Allocate):
            assert node.buffer.ndim == 1, func.script()


@pytest.mark.parametrize("operator", list(OPERATORS))
def test_operator_lowers_to_the_same_results(operator):
    func, shapes = OPERATORS[operator]()
    lowered = tir.lower(func, verify=True)
    assert_codegen_contract(lowered)
    assert_same_results(func, lowered, shapes)


@pytest.mark.parametrize("size", [1, 4, 33])
def test_symbolic_shape_lowers_for_every_size(size):
    func, shapes = OPERATORS["symbolic_elementwise"](size)
    assert_same_results(func, tir.lower(func), shapes)


def dumped_files(directory):
    return sorted(os.listdir(directory))


def test_dump_ir_writes_one_file_per_pass(tmp_path):
    func, _ = OPERATORS["matmul"]()
    tir.lower(func, dump_ir=tmp_path)
    names = dumped_files(tmp_path)
    assert names[0] == "00_input.py" and names[-1] == "timing.txt"
    passes = names[1:-1]
    assert [re.fullmatch(r"(\d\d)_(\w+)\.py", p).group(1) for p in passes] == [
        f"{k:02d}" for k in range(1, len(passes) + 1)]
    first = ["lower_init_block", "plan_buffer_allocation", "compact_buffer_allocation",
             "lower_opaque_block", "flatten_buffers", "simplify"]
    assert [p[3:-3] for p in passes[:6]] == first
    assert any(p.endswith("_storage_rewrite.py") for p in passes)
    read = lambda name: (tmp_path / name).read_text()  # noqa: E731
    # A matmul has no intermediate buffer: planning and compaction change nothing.
    assert read("02_plan_buffer_allocation.py") == "(unchanged)\n"
    assert read("03_compact_buffer_allocation.py") == "(unchanged)\n"
    assert "if v_k == 0:" in read("01_lower_init_block.py")
    assert "T.block" not in read("04_lower_opaque_block.py")
    timing = read("timing.txt")
    for p in passes:
        assert p[3:-3] in timing
    assert "total" in timing


def test_dump_ir_of_a_module_uses_a_folder_per_function(tmp_path):
    mod = IRModule({"mm": OPERATORS["matmul"]()[0], "sm": OPERATORS["softmax"]()[0]})
    lowered = tir.lower(mod, dump_ir=tmp_path)
    assert sorted(lowered.keys()) == ["mm", "sm"]
    assert dumped_files(tmp_path) == ["mm", "sm"]
    assert "00_input.py" in dumped_files(tmp_path / "sm")
    for name, shapes in (("mm", OPERATORS["matmul"]()[1]), ("sm", OPERATORS["softmax"]()[1])):
        assert_codegen_contract(lowered[name])
        assert_same_results(mod[name], lowered[name], shapes)


def test_lowering_a_lowered_function_changes_nothing():
    func, _ = OPERATORS["layer_norm"]()
    lowered = tir.lower(func)
    assert tir.lower(lowered).same_as(lowered)


def test_lower_takes_a_schedule():
    func, shapes = OPERATORS["matmul"]()
    sch = tir.Schedule(func)
    i, _, _ = sch.get_loops("C")
    sch.split(i, factors=[None, 2])
    lowered = tir.lower(sch)
    assert isinstance(lowered, IRModule)
    assert lowered["main"].script() == tir.lower(sch.mod)["main"].script()
    assert_codegen_contract(lowered["main"])
    assert_same_results(func, lowered["main"], shapes)


def test_lower_dump_ir_takes_a_path_and_rejects_other_types(tmp_path):
    func, _ = OPERATORS["matmul"]()
    tir.lower(func, dump_ir=tmp_path / "dump")
    assert "00_input.py" in dumped_files(tmp_path / "dump")
    with pytest.raises(kiln.KilnTypeError, match="tir.lower: dump_ir must be a path"):
        tir.lower(func, dump_ir=3)
