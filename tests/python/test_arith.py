"""kiln.arith from Python: the Analyzer (simplifiers, bounds, facts, constraint scopes), interval
sets, and affine iterator maps, with their error messages."""
import itertools

import pytest

import kiln
from kiln import arith, tir


def var(name):
    return tir.Var(name, "int32")


def const_value(expr):
    assert isinstance(expr, tir.IntImm), f"{expr} is not a constant"
    return expr.value


# ---------------------------------------------------------------------------------------------
# Analyzer


def test_simplify_variants():
    ana = arith.Analyzer()
    x, y = var("x"), var("y")
    ana.bind(y, tir.Range(0, 8))
    assert ana.simplify((x * 8 + y) // 8).same_as(x)
    assert ana.canonical_simplify(x // 4 * 4 + x % 4).same_as(x)
    assert const_value(ana.rewrite_simplify(x - x)) == 0
    assert str(ana.simplify(x + 1 - 1)) == "x"


def test_const_int_bound_and_sentinels():
    ana = arith.Analyzer()
    x = var("x")
    ana.bind(x, tir.Range(2, 10))
    bound = ana.const_int_bound(x * 2 + 1)
    assert (bound.min_value, bound.max_value) == (5, 19)
    wide = ana.const_int_bound(tir.Var("w", "int64"))
    assert wide.min_value == arith.ConstIntBound.NEG_INF
    assert wide.max_value == arith.ConstIntBound.POS_INF
    assert arith.ConstIntBound.POS_INF == (1 << 63) - 1
    assert arith.ConstIntBound.NEG_INF == -arith.ConstIntBound.POS_INF


def test_modular_set():
    ana = arith.Analyzer()
    x = var("x")
    m = ana.modular_set(x * 6 + 4)
    assert (m.coeff, m.base) == (6, 4)
    assert ana.modular_set(tir.IntImm("int32", 7)) == arith.ModularSet(0, 7)


def test_bind_expression_and_update():
    ana = arith.Analyzer()
    x, y = var("x"), var("y")
    ana.bind(x, y + 1)
    assert ana.can_prove(x - y == 1)
    z = var("z")
    ana.update(z, arith.ConstIntBound(0, 15))
    assert ana.can_prove(z < 16)
    assert not ana.can_prove(z < 15)
    # An unbounded side falls back to the limit of the dtype.
    ana.update(z, arith.ConstIntBound(arith.ConstIntBound.NEG_INF, 3), override=True)
    assert ana.const_int_bound(z).min_value == -(1 << 31)
    assert ana.const_int_bound(z).max_value == 3
    ana.update(z, arith.ModularSet(4, 1))
    assert ana.modular_set(z) == arith.ModularSet(4, 1)


def test_bind_conflict_is_an_error():
    ana = arith.Analyzer()
    x = var("x")
    ana.bind(x, tir.Range(0, 4))
    with pytest.raises(kiln.KilnValueError, match="variable x is already bound"):
        ana.bind(x, tir.Range(0, 8))
    ana.bind(x, tir.Range(0, 8), allow_override=True)
    assert ana.const_int_bound(x).max_value == 7


def test_update_with_wrong_info_is_a_type_error():
    ana = arith.Analyzer()
    with pytest.raises(kiln.KilnTypeError, match="info must be a ConstIntBound or a ModularSet"):
        ana.update(var("x"), 3)
    with pytest.raises(kiln.KilnTypeError, match="var must be a tir.Var"):
        ana.bind(3, tir.Range(0, 4))


def test_constraint_scope_is_a_context_manager():
    ana = arith.Analyzer()
    x, n = var("x"), tir.SizeVar("n", "int32")
    assert not ana.can_prove(x < n + 1)
    with ana.constraint_scope(x < n):
        assert ana.can_prove(x < n + 1)
        with ana.constraint_scope(x >= 2):
            assert ana.can_prove(x > 1)
        assert not ana.can_prove(x > 1)
    assert not ana.can_prove(x < n + 1)


def test_constraint_scope_errors():
    ana = arith.Analyzer()
    x = var("x")
    with pytest.raises(kiln.KilnTypeError, match="the condition must be a bool"):
        ana.constraint_scope(x + 1)
    scope = ana.constraint_scope(x < 4)
    with scope:
        with pytest.raises(kiln.KilnValueError, match="is already entered"):
            scope.__enter__()


def test_can_prove_equal():
    ana = arith.Analyzer()
    x = var("x")
    assert ana.can_prove_equal(x * 2 + x, x * 3)
    assert not ana.can_prove_equal(x * 2, x)


# ---------------------------------------------------------------------------------------------
# Interval sets


def test_int_set_of_affine_and_split_indices():
    ana = arith.Analyzer()
    i, j, x = var("i"), var("j"), var("x")
    s = ana.int_set(i * 4 + j, {i: tir.Range(0, 8), j: tir.Range(0, 4)})
    assert (const_value(s.min_value), const_value(s.max_value)) == (0, 31)
    s = ana.int_set(x // 4, {x: tir.Range(0, 32)})
    assert (const_value(s.min_value), const_value(s.max_value)) == (0, 7)
    # An IntSet as a domain, and a symbolic one.
    io = var("io")
    s = ana.int_set(x // 4, {x: arith.IntervalSet(io * 32, io * 32 + 31)})
    assert ana.can_prove_equal(s.min_value, io * 8)
    assert ana.can_prove_equal(s.max_value, io * 8 + 7)


def test_int_set_ends_and_predicates():
    ana = arith.Analyzer()
    i = var("i")
    half = ana.int_set(i * 2, {i: arith.IntervalSet(0, None)})
    assert const_value(half.min_value) == 0
    assert half.max_value is None
    assert not half.is_everything()
    assert arith.IntSet.everything().is_everything()
    assert arith.IntSet.nothing().is_nothing()
    assert arith.IntSet.single_point(i).is_single_point()
    r = arith.IntervalSet(2, 9).cover_range()
    assert (const_value(r.min), const_value(r.extent)) == (2, 8)
    r = half.cover_range(tir.Range(0, 100))
    assert (const_value(r.min), const_value(r.extent)) == (0, 100)
    with pytest.raises(kiln.KilnValueError, match="is unbounded and has no covering range"):
        half.cover_range()
    assert repr(arith.IntervalSet(0, 3)) == "IntSet[0, 3]"


def test_union_intersect_and_region():
    u = arith.union_sets([arith.IntervalSet(0, 3), arith.IntervalSet(8, 9)])
    assert (const_value(u.min_value), const_value(u.max_value)) == (0, 9)
    assert arith.intersect_sets([arith.IntervalSet(0, 3), arith.IntervalSet(5, 9)]).is_nothing()
    i, j = var("i"), var("j")
    region = arith.eval_region([i * 4 + j, tir.Range(j, j + 2)],
                               {i: tir.Range(0, 8), j: tir.Range(0, 4)})
    assert [(const_value(r.min), const_value(r.extent)) for r in region] == [(0, 32), (0, 5)]


# ---------------------------------------------------------------------------------------------
# Iterator maps


def test_detect_split_and_fuse():
    i, j, f = var("i"), var("j"), var("f")
    res = arith.detect_iter_map([f // 16, f % 16], {f: tir.Range(0, 256)})
    assert res and res.errors == []
    assert res.forms == ["split(f, 16, 16)", "split(f, 1, 16)"]
    assert [str(e) for e in res.indices] == ["f // 16", "f % 16"]
    res = arith.detect_iter_map([i * 16 + j], {i: tir.Range(0, 8), j: tir.Range(0, 16)})
    assert res
    assert str(res.indices[0]) == "i * 16 + j"


def test_detect_reports_overlap_and_non_affine():
    i, j = var("i"), var("j")
    iters = {i: tir.Range(0, 8), j: tir.Range(0, 4)}
    res = arith.detect_iter_map([i * 3 + j], iters)
    assert not res
    assert res.indices == []
    assert res.errors == [
        "index 0 (i * 3 + j): in i * 3 + j, the term j ranges over 4 values of step 1 but the "
        "next term i * 3 has scale 3: the terms overlap, so the map is not injective"]
    res = arith.detect_iter_map([i * i], iters, check_level="no_check")
    assert "is not affine: it multiplies i and i" in res.errors[0]


def test_detect_levels_and_predicate():
    i, j = var("i"), var("j")
    iters = {i: tir.Range(0, 8), j: tir.Range(0, 4)}
    assert not arith.detect_iter_map([i], iters)
    assert arith.detect_iter_map([i], iters, check_level="surjective")
    assert arith.detect_iter_map([i], iters, check_level=arith.IterMapLevel.Surjective)
    assert arith.detect_iter_map([i + j], iters, check_level="no_check")
    # A non-divisible split: [0, 30) from 8 x 4 loops.
    res = arith.detect_iter_map([i * 4 + j], iters, predicate=i * 4 + j < 30)
    assert res
    assert res.forms == ["split(fuse(split(i, 1, 8)*4 + split(j, 1, 4); extent 30), 1, 30)"]
    # Int extents are accepted for ranges.
    assert arith.detect_iter_map([i, j], {i: 8, j: 4})


def test_detect_errors_for_bad_arguments():
    i = var("i")
    with pytest.raises(kiln.KilnValueError, match='check_level must be "bijective"'):
        arith.detect_iter_map([i], {i: 8}, check_level="exact")
    with pytest.raises(kiln.KilnTypeError, match="a key of input_iters must be a tir.Var"):
        arith.detect_iter_map([i], {"i": 8})
    with pytest.raises(kiln.KilnTypeError, match="the range of i must be a tir.Range"):
        arith.detect_iter_map([i], {i: "eight"})


def test_iter_map_simplify():
    f, i, j = var("f"), var("i"), var("j")
    out = arith.iter_map_simplify([f // 16 * 16 + f % 16, (i * 4 + j) % 4, (i * 4 + j) // 4],
                                  {f: 256, i: 8, j: 4})
    assert out[0].same_as(f)
    assert out[1].same_as(j)
    assert out[2].same_as(i)


def test_inverse_affine_iter_map_round_trips():
    i, j = var("i"), var("j")
    o0, o1 = var("o0"), var("o1")
    indices = [(i * 4 + j) // 8, (i * 4 + j) % 8]
    res = arith.detect_iter_map(indices, {i: 6, j: 4})
    assert res
    inverse = arith.inverse_affine_iter_map(res, [o0, o1])
    assert set(v.name for v in inverse) == {"i", "j"}
    by_name = {v.name: e for v, e in inverse.items()}
    ana = arith.Analyzer()
    for vi, vj in itertools.product(range(6), range(4)):
        f = vi * 4 + vj
        point = {o0: f // 8, o1: f % 8}
        for name, expected in (("i", vi), ("j", vj)):
            value = ana.simplify(_substitute(by_name[name], point))
            assert const_value(value) == expected


def test_inverse_of_a_failed_detection_is_an_error():
    i, j = var("i"), var("j")
    res = arith.detect_iter_map([i + j], {i: 8, j: 4})
    with pytest.raises(kiln.KilnValueError, match="holds errors, not a map"):
        arith.inverse_affine_iter_map(res, [var("o")])


def _substitute(expr, values):
    """expr with each variable of `values` bound to a constant, through a fresh Analyzer."""
    ana = arith.Analyzer()
    for v, value in values.items():
        ana.bind(v, tir.IntImm("int32", value))
    return ana.simplify(expr)


def test_int_set_ends_never_wrap_around():
    # f0 * n is only known to fit int32; scaling its bounds by 8 must not wrap to [0, -8].
    ana = arith.Analyzer()
    f0, n = var("f0"), var("n")
    s = ana.int_set(f0 * n * 8, {f0: tir.Range(0, 2)})
    assert s.min_value is None and s.max_value is None


def test_int_set_ends_derived_from_type_limits_are_infinite():
    # x % n for an unknown n is bounded only by n's type: an end of 2147483646 would overflow in
    # the arithmetic that follows (a region's extent), so it is left infinite.
    ana = arith.Analyzer()
    x, n = var("x"), var("n")
    s = ana.int_set(x % n + 8, {x: tir.Range(0, 100)})
    assert s.max_value is None
