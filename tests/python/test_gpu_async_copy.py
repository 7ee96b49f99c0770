"""Stages of the shared tiles, copied asynchronously: a loop annotated "kiln.prefetch_shared" = n
(2 or more) on a CUDA target of sm_80 or newer (cp.async) gets each shared tile its copies fill
n times over; the copies of step k + n - 1 go into one stage (ptx_cp_async, a group of their
own) while the threads compute on step k's, after a wait for step k's group and a barrier.
Other targets get the register prefetch of value 1.

Checked on the lowered IR (the stages, the order of copies, commit, wait, barrier and product),
on the interpreter with GPU semantics (its copies complete at once) against NumPy, in NVRTC's PTX
(cp.async of 4, 8 or 16 bytes, commit_group, wait_group), and through the tuner's sketches,
which sample it on such targets and count the second stage against the shared memory. The
kernels run against NumPy where a CUDA device is."""
import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.autotune import SpaceGenerator

from gpu_helpers import (first_candidates, gpu_tiled_matmul, nvrtc_missing, padded_conv2d,
                         skip_unless)
from lower_helpers import matmul
from mma_helpers import (check_gemm_on, gemm_args, gemm_expected, gemm_fp16, reference_twin,
                         schedule_mma_gemm, sm80_device)

KEY = "kiln.prefetch_shared"
SM80 = "cuda -arch=sm_80"


def tiled(shape, value=2):
    """gpu_tiled_matmul's schedule (8 x 8 outputs per thread block, one per thread; A's and B's
    tiles of each step of k0 copied into shared memory, one float per thread), k0 annotated."""
    _, mod = gpu_tiled_matmul(*shape)
    sch = tir.Schedule(mod)
    sch.annotate(sch.get_loops(sch.get_block("C"))[4], KEY, value)
    return sch


def inputs(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (m, k)).astype("float32"),
            rng.uniform(-1, 1, (k, n)).astype("float32"))


def kernel_text(sch, target=SM80):
    return tir.lower(sch.mod, target=target)["main_kernel0"].script()


def test_the_next_steps_copies_go_into_the_other_stage_before_this_steps_product():
    text = kernel_text(tiled((32, 24, 40)))
    # Each 8 x 8 tile twice over, allocated once around the loop.
    assert text.count('T.allocate((128,), "float32", scope="shared")') == 2
    assert "_prefetch" not in text and KEY not in text
    # Before the loop: step 0's copies into stage 0, one group.
    loop_start = text.index("for k_0 in range(4):")
    prologue = text[:loop_start]
    assert prologue.count("T.ptx_cp_async(") == 2 and "T.ptx_cp_async_commit_group()" in prologue
    # In the loop: step k + 1's copies into stage (k + 1) % 2, their group, the wait for step
    # k's, a barrier, then the product on stage k % 2 (the last step, after the loop, copies
    # nothing).
    loop = text[loop_start:]
    copy = loop.index("T.ptx_cp_async(A_1[")
    commit = loop.index("T.ptx_cp_async_commit_group()")
    wait = loop.index("T.ptx_cp_async_wait_group(1)")
    barrier = loop.index('T.storage_sync("shared")')
    product = loop.index("* B_shared[")
    assert copy < commit < wait < barrier < product
    assert "(k_0 + 1) % 2 * 64" in loop[:commit] and "k_0 % 2 * 64" in loop[barrier:]
    last = text[text.index("for k_0_1 in range"):]
    assert "T.ptx_cp_async(" not in last
    assert last.index("T.ptx_cp_async_wait_group(1)") < last.index('T.storage_sync("shared")')


def test_three_stages_keep_two_steps_of_copies_in_flight():
    text = kernel_text(tiled((32, 24, 40), value=3))
    assert text.count('T.allocate((192,), "float32", scope="shared")') == 2
    loop_start = text.index("for k_0 in range(")
    prologue, loop = text[:loop_start], text[loop_start:]
    # Steps 0 and 1 before the loop, a group each; step k + 2 into stage (k + 2) % 3 in it.
    assert prologue.count("T.ptx_cp_async(") == 4
    assert prologue.count("T.ptx_cp_async_commit_group()") == 2
    assert "k_0 * 8 + ax0_ax1_fused_1_4 + 16])" in loop and "(k_0 + 2) % 3 * 64]" in loop
    # The loop of steps 0-2 reads stage k (k % 3 simplified), the last two steps after it
    # stages 0 and 1 (k * 64 - 192).
    assert "A_shared[i_1 * 8 + k_1 + k_0 * 64]" in loop and "k_0_1 * 64 - 192]" in loop
    assert loop.count("T.ptx_cp_async_wait_group(2)") == 2
    # More stages than steps (2 steps of k) count as one per step.
    text = kernel_text(tiled((16, 16, 16), value=8))
    assert text.count('T.allocate((128,), "float32", scope="shared")') == 2
    assert "T.ptx_cp_async_wait_group(1)" in text


@pytest.mark.parametrize("value", [2, 3, 4])
@pytest.mark.parametrize("shape", [(32, 24, 40), (16, 16, 16), (24, 16, 64)])
def test_stages_compute_the_product_with_gpu_semantics(shape, value):
    # (16, 16, 16): two steps of k, fewer than 3 or 4 stages.
    m, n, k = shape
    a, b = inputs(m, n, k)
    c = np.zeros((m, n), "float32")
    tir.interpret(tir.lower(tiled(shape, value=value).mod, target=SM80), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["opencl", "cuda -arch=sm_75"])
def test_without_asynchronous_copies_the_registers_prefetch(target):
    text = kernel_text(tiled((32, 24, 40)), target)
    assert "ptx_cp_async" not in text
    assert text == kernel_text(tiled((32, 24, 40), value=1), target)


def test_cuda_copies_with_cp_async():
    skip_unless(nvrtc_missing())
    rt = kiln.build(tiled((64, 64, 64)).mod, target=SM80)
    source, ptx = rt.get_source("cuda"), rt.get_source("ptx")
    # One float of A and one of B per thread and step: 4-byte copies, through L1.
    assert 'asm volatile("cp.async.ca.shared.global [%0], [%1], 4;"' in source
    assert 'asm volatile("cp.async.wait_group 1;" ::: "memory");' in source
    assert "cp.async.ca.shared.global" in ptx and "cp.async.commit_group" in ptx
    assert "cp.async.wait_group 1" in ptx and ".local" not in ptx
    three = kiln.build(tiled((64, 64, 64), value=3).mod, target=SM80).get_source("ptx")
    assert "cp.async.wait_group 2" in three and ".local" not in three
    # Before sm_80 the same schedule has no asynchronous copy.
    older = kiln.build(tiled((64, 64, 64)).mod, target="cuda -arch=sm_75").get_source("ptx")
    assert "cp.async" not in older


@pytest.mark.parametrize("copy_lanes, instruction", [
    (1, None), (2, "cp.async.ca.shared.global [%0], [%1], 4;"),
    (4, "cp.async.ca.shared.global [%0], [%1], 8;")])
def test_tensor_core_tiles_are_copied_by_the_width_of_the_copy(copy_lanes, instruction):
    # float16 copies of 1, 2 or 4 halves per thread: a single half (2 bytes) has no cp.async
    # and is copied as it is; the schedule still computes the product in two stages.
    func = gemm_fp16(128, 128, 128)
    twin = schedule_mma_gemm(func, reference=True, prefetch=2, copy_lanes=copy_lanes).mod
    a, b, c = gemm_args(func)
    tir.interpret(tir.lower(twin, target=SM80), a, b, c)
    np.testing.assert_allclose(c, gemm_expected(a, b), rtol=1e-4, atol=1e-4)
    if nvrtc_missing():
        return
    sch = schedule_mma_gemm(func, prefetch=2, copy_lanes=copy_lanes, ldmatrix=True)
    rt = kiln.build(sch.mod, target=SM80)
    source, ptx = rt.get_source("cuda"), rt.get_source("ptx")
    if instruction is None:
        assert "cp.async.c" not in source.replace("cp.async.commit_group", "")
    else:
        assert instruction in source
    assert "cp.async.wait_group 1" in ptx and "ldmatrix" in ptx and ".local" not in ptx
    assert "__shared__ __align__(16) unsigned short A_shared[4096];" in source  # 2 x 64 x 32


def test_padded_tiles_are_copied_with_zero_fill():
    # A convolution's copies of its padded input: cp.async reads the element where the guard
    # keeps it and zero-fills the shared element elsewhere (its source size 0); the lowered
    # kernel computes the convolution with GPU semantics.
    func, expected = padded_conv2d()
    space = SpaceGenerator(func, SM80)
    for candidate in first_candidates(space, 30, seeds=range(600)):
        if not any(f'"{KEY}": {n}' in candidate.mod.script() for n in (2, 3)):
            continue
        lowered = tir.lower(candidate.mod, target=SM80)
        if "T.ptx_cp_async(T.if_then_else(" not in lowered["main_kernel0"].script():
            continue
        shapes = [[int(d) for d in func.buffer_map[p].shape] for p in func.params]
        rng = np.random.default_rng(0)
        args = [rng.uniform(-1, 1, s).astype("float32") for s in shapes[:-1]]
        out = np.zeros(shapes[-1], "float32")
        tir.interpret(lowered, *args, out)
        np.testing.assert_allclose(out, expected(*args), rtol=1e-4, atol=1e-4)
        if not nvrtc_missing():
            source = kiln.build(candidate.mod, target=SM80).get_source("cuda")
            assert 'asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"' in source
        return
    pytest.fail("no candidate of the first 30 copies a padded tile in stages")


def test_the_tilings_sample_two_stages_where_the_target_copies_asynchronously():
    func = gemm_fp16(128, 128, 128)

    def drawn(target, sketch):
        space = SpaceGenerator(func, target)
        values = set()
        for candidate in first_candidates(space, 12, sketch=sketch, seeds=range(400)):
            for value in (0, 1, 2, 3):
                if f'"{KEY}": {value}' in candidate.mod.script():
                    values.add(value)
        return values
    assert drawn(SM80, 1) == {0, 1, 2, 3}  # the tensor-core sketch
    assert drawn(SM80, 0) == {0, 1, 2, 3}  # the CUDA-core one
    assert drawn("cuda -arch=sm_75", 0) == {0, 1}


def test_the_second_stage_counts_against_the_shared_memory():
    # Draws whose two stages (padded rows included) would not fit are drawn again or not padded:
    # the verifier after lowering refuses none.
    space = SpaceGenerator(gemm_fp16(1024, 1024, 1024), SM80)
    finished = [space.sample(1, seed=seed) for seed in range(24)]
    assert sum(c is not None for c in finished) == 24, space.rejections
    assert not any(k.startswith("postproc") for k in space.rejections), space.rejections
    assert any(f'"{KEY}": 2' in c.mod.script() for c in finished)


def test_sampled_float32_candidates_compute_the_product_in_two_stages():
    func, _ = matmul(64, 64, 96)
    space = SpaceGenerator(func, SM80)
    checked, widths = 0, set()
    for seed, candidate in enumerate(first_candidates(space, 16, seeds=range(400))):
        if f'"{KEY}": 2' not in candidate.mod.script():
            continue
        lowered = tir.lower(candidate.mod, target=SM80)
        assert "T.ptx_cp_async_wait_group(1)" in lowered["main_kernel0"].script()
        a, b = inputs(64, 64, 96, seed)
        c = np.zeros((64, 64), "float32")
        tir.interpret(lowered, a.reshape(64, 96), b.reshape(96, 64), c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
        checked += 1
        if not nvrtc_missing():
            widths.add(kiln.build(candidate.mod, target=SM80).get_source("cuda").count(
                "cp.async.cg.shared.global [%0], [%1], 16;") > 0)
    assert checked >= 2
    # Copies of four floats per thread (a sampled width) are 16-byte cp.async, past L1.
    assert nvrtc_missing() or True in widths


def test_a_tensor_core_candidate_in_two_stages_computes_the_product():
    func = gemm_fp16(64, 64, 128)
    space = SpaceGenerator(func, SM80)
    for candidate in first_candidates(space, 30, sketch=1, seeds=range(400)):
        if f'"{KEY}": 2' not in candidate.mod.script():
            continue
        try:
            lowered = tir.lower(reference_twin(candidate.trace, func), target=SM80)
        except kiln.KilnValueError as e:
            # The twin keeps its fragments of A and B in shared memory too: some do not fit.
            assert "bytes of shared memory exceed" in str(e)
            continue
        assert "T.ptx_cp_async_wait_group(1)" in lowered["main_kernel0"].script()
        a, b, c = gemm_args(func)
        tir.interpret(lowered, a, b, c)
        np.testing.assert_allclose(c, gemm_expected(a, b), rtol=1e-4, atol=1e-4)
        return
    pytest.fail("no candidate of the first 30 draws two stages with a twin that fits")


def test_cuda_runs_like_numpy():
    device = sm80_device("float16")
    a, b = inputs(64, 48, 56)
    rt = kiln.build(tiled((64, 48, 56)).mod, target="cuda")
    c = kiln.nd.array(np.zeros((64, 48), "float32"), device=device)
    rt["main"](kiln.nd.array(a, device=device), kiln.nd.array(b, device=device), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)
    func = gemm_fp16(128, 192, 96)
    rt = kiln.build(schedule_mma_gemm(func, prefetch=2, copy_lanes=4, ldmatrix=True).mod,
                    target="cuda")
    check_gemm_on(device, rt, func, tolerance=1e-3)
