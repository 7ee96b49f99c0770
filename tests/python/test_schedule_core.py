"""tir.Schedule's core: handles, getters, sampling, traces and the all-or-nothing rule of
failed primitives."""
import json

import pytest

import kiln
from kiln import tir

from schedule_helpers import assert_trace_roundtrip, matmul, matmul_relu


def test_get_block_and_loops():
    sch = tir.Schedule(matmul())
    block = sch.get_block("C")
    loops = sch.get_loops(block)
    assert [sch.get(loop).loop_var.name for loop in loops] == ["i", "j", "k"]
    assert sch.get(block).name_hint == "C"
    assert isinstance(block, tir.BlockRV) and isinstance(loops[0], tir.LoopRV)


def test_get_child_blocks_producers_and_consumers():
    sch = tir.Schedule(matmul_relu())
    c, d = sch.get_block("C"), sch.get_block("D")
    root = sch.get_block("root")
    assert [sch.get(b).name_hint for b in sch.get_child_blocks(root)] == ["C", "D"]
    assert [sch.get(b).name_hint for b in sch.get_consumers(c)] == ["D"]
    assert [sch.get(b).name_hint for b in sch.get_producers(d)] == ["C"]
    assert sch.get_producers(c) == []


def test_get_block_error_lists_the_blocks():
    sch = tir.Schedule(matmul())
    with pytest.raises(tir.ScheduleError) as info:
        sch.get_block("X")
    assert type(info.value).__name__ == "BlockNotFoundError"
    assert "function 'main' has no block named 'X'; its blocks are: root, C" in str(info.value)


def test_handles_stay_valid_across_primitives():
    sch = tir.Schedule(matmul())
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.split(k, factors=[2, 4])
    # i and j were not touched by the split of k: their handles still work.
    sch.reorder(j, i)
    assert [sch.get(loop).loop_var.name for loop in sch.get_loops(block)] == [
        "j", "i", "k_0", "k_1"]


def test_stale_handle_names_the_primitive_that_removed_it():
    sch = tir.Schedule(matmul())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 4])
    with pytest.raises(tir.ScheduleError) as info:
        sch.parallel(i)
    assert type(info.value).__name__ == "StaleHandleError"
    assert "the loop handle l1 (loop 'i') is stale: the loop was removed by split" in str(info.value)


def test_wrong_handle_kind_is_a_type_error():
    sch = tir.Schedule(matmul())
    block = sch.get_block("C")
    with pytest.raises(TypeError):
        sch.parallel(block)


def test_failed_primitive_leaves_the_schedule_unchanged():
    sch = tir.Schedule(matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[4, 4])
    before_mod, before_len = sch.mod, len(sch.trace)
    with pytest.raises(tir.ScheduleError):
        sch.split(j, factors=[None, None])
    with pytest.raises(tir.ScheduleError):
        sch.vectorize(k)
    assert sch.mod.same_as(before_mod)
    assert len(sch.trace) == before_len
    sch.split(j, factors=[3, 4])  # still usable
    assert len(sch.trace) == before_len + 1


def test_copy_is_independent():
    sch = tir.Schedule(matmul())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    other = sch.copy()
    other.split(i, factors=[2, 8])
    assert not kiln.ir.structural_equal(sch.mod, other.mod)
    assert len(other.trace) == len(sch.trace) + 1


def test_same_seed_same_decisions():
    def decisions(seed):
        sch = tir.Schedule(matmul(64, 48, 32), seed=seed)
        i, j, k = sch.get_loops(sch.get_block("C"))
        tiles = [sch.get(v) for v in sch.sample_perfect_tile(i, n=3, max_innermost_factor=8)]
        pick = sch.get(sch.sample_categorical([1, 2, 4, 8], [0.1, 0.2, 0.3, 0.4]))
        return tiles, pick

    assert decisions(7) == decisions(7)
    assert len({str(decisions(s)) for s in range(12)}) > 1


def test_sample_perfect_tile_multiplies_to_the_extent():
    sch = tir.Schedule(matmul(64, 48, 32), seed=3)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    for _ in range(20):
        tiles = [sch.get(v) for v in sch.sample_perfect_tile(i, n=4, max_innermost_factor=4)]
        assert tiles[0] * tiles[1] * tiles[2] * tiles[3] == 64
        assert tiles[-1] <= 4


def test_sample_with_an_invalid_decision():
    sch = tir.Schedule(matmul(64, 48, 32))
    i, _, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(tir.ScheduleError) as info:
        sch.sample_perfect_tile(i, n=2, max_innermost_factor=16, decision=[3, 20])
    assert "decision [3, 20] is not 2 positive factors of 64" in str(info.value)
    with pytest.raises(tir.ScheduleError) as info:
        sch.sample_categorical([1, 2], [0.5, 0.5], decision=5)
    assert "decision 5 is not an index into 2 candidates" in str(info.value)


def test_trace_json_is_plain_data_and_replays():
    func = matmul(64, 48, 32)
    sch = tir.Schedule(func, seed=11)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    factors = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)
    io, ii = sch.split(i, factors=factors)
    sch.reorder(j, io)
    sch.parallel(j)
    data = sch.trace.as_json()
    assert json.loads(json.dumps(data)) == data
    kinds = [inst["kind"] for inst in data["instructions"]]
    assert kinds == ["get_block", "get_loops", "sample_perfect_tile", "split", "reorder",
                     "parallel"]
    assert_trace_roundtrip(sch, func)


def test_replay_with_a_replaced_decision():
    func = matmul(64, 48, 32)
    sch = tir.Schedule(func, seed=1)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
    trace = sch.trace.with_decision(2, [16, 4])
    replayed = tir.Schedule(func)
    trace.apply_to_schedule(replayed)
    outer, inner = replayed.get_loops(replayed.get_block("C"))[:2]
    assert (replayed.get(outer).extent.value, replayed.get(inner).extent.value) == (16, 4)


def test_as_python_is_runnable_code():
    func = matmul(64, 48, 32)
    sch = tir.Schedule(func, seed=2)
    i, j, k = sch.get_loops(sch.get_block("C"))
    fused = sch.fuse(i, j)
    sch.split(fused, factors=[None, 8])
    text = sch.trace.as_python()
    assert "l4 = sch.fuse(l1, l2, preserve_unit_iters=True)" in text
    assert "sch.split(loop=l4, factors=[None, 8], preserve_unit_iters=True)" in text
    assert_trace_roundtrip(sch, func)


def test_malformed_trace_is_a_clear_error():
    sch = tir.Schedule(matmul())
    with pytest.raises(kiln.KilnValueError) as info:
        tir.Trace.apply_json_to_schedule({"instructions": [{"kind": "warp_speed"}]}, sch)
    assert "unknown instruction kind 'warp_speed'" in str(info.value)
    with pytest.raises(kiln.KilnValueError) as info:
        tir.Trace.apply_json_to_schedule(
            {"instructions": [{"kind": "get_loops", "inputs": ["b9"], "outputs": ["l0"]}]}, sch)
    assert "uses handle \"b9\", which no earlier instruction defined" in str(info.value)
    assert len(sch.trace) == 0
