"""Program features and the tuner's cost model.

:func:`extract_features` turns a lowered function (``kiln.tir.lower``) into one fixed-length
vector of numbers for a target: its arithmetic by kind, its loops, its buffer accesses (strides,
footprints, cache traffic), its allocations and the terms of the analytical prior.
:func:`analytical_prior` estimates throughput from the same analysis with no data, so that the
first candidates a search measures are already chosen sensibly. :class:`CostModel` learns to rank
candidates from measurements (XGBoost with a ranking objective, one group per tuning task) and
blends its ranking with the prior's as measurements arrive. :func:`top_k_recall` says how well a
ranking picks the fastest candidates.
"""
import dataclasses
import os

import numpy as np

from .._kiln import autotune as _core
from ..error import KilnTypeError, KilnValueError


def _target_handle(target, api):
    """A target string, or the parsed target behind a kiln.target.Target."""
    from ..target import Target
    if isinstance(target, Target):
        return target._handle
    if not isinstance(target, str):
        raise KilnTypeError(f"{api}: target must be a target string such as \"llvm\" or a "
                            f"kiln.target.Target, found an object of type "
                            f"{type(target).__name__}")
    return target


def _rows(features, api):
    """Feature rows as a 2-D float32 array (a 1-D array is one row)."""
    if not isinstance(features, (np.ndarray, list, tuple)):
        raise KilnTypeError(f"{api}: features must be a 2-D array of feature rows (NumPy array "
                            f"or list of rows), found an object of type "
                            f"{type(features).__name__}")
    try:
        rows = np.ascontiguousarray(features, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise KilnValueError(f"{api}: features must be rows of numbers of equal length: {error}")
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    if rows.ndim != 2:
        raise KilnValueError(f"{api}: features must be a 2-D array (one row per candidate), "
                             f"found {rows.ndim} dimensions")
    return rows


def _numbers(values, api, param):
    """A sequence of real numbers as a list of floats."""
    if not isinstance(values, (np.ndarray, list, tuple)):
        raise KilnTypeError(f"{api}: {param} must be a list or array of numbers, found an object "
                            f"of type {type(values).__name__}")
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise KilnTypeError(f"{api}: {param} must be a list or array of numbers: {error}")
    if array.ndim != 1:
        raise KilnValueError(f"{api}: {param} must be one-dimensional, found {array.ndim} "
                             "dimensions")
    return array.tolist()


def _value_class(cls):
    """Makes ``cls`` a frozen dataclass whose constructor says where its fields are described."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    cls.__init__.__doc__ = (f"Creates a {cls.__name__} from its fields, in the order and with "
                            "the meaning that the class docstring gives.")
    return cls


def feature_names():
    """The names of the features, in the order :func:`extract_features` writes them.

    Names are grouped by prefix: ``program.`` (totals), ``target.``, ``arith.`` (operations by
    kind, weighted by how often each store runs), ``vector.``, ``loop.``, ``dominant.`` (the
    store with the most estimated cycles), ``tile.`` (its register tile), ``memory.``,
    ``accessN.`` (its accesses, most traffic first), ``alloc.``, ``prior.`` and ``gpu.`` (GPU
    targets). Counts that grow with the problem size are log2(1 + x).
    """
    return list(_core.feature_names())


def extract_features(lowered, target, num_cores=None):
    """The feature vector of ``lowered`` for ``target``: a float32 NumPy array of
    ``len(feature_names())`` finite numbers.

    lowered: a PrimFunc after ``kiln.tir.lower`` (the flat loop program). target: a target
    string or a kiln.target.Target; for a GPU target ("cuda", "opencl") the ``gpu.*`` features
    describe its thread blocks, its shared memory's wavefronts (bank conflicts) and its global
    memory's 32-byte sectors (coalescing) per warp request, and from the GPU prior
    (:func:`estimate_prior`) the estimated registers per thread, the occupancy and the balance
    over the multiprocessors of its slowest kernel; for a CPU target they are 0. num_cores:
    threads that run a parallel loop (default: the runtime's thread count for the host target,
    8 for another target). Loops of symbolic extent count one iteration; indices the analysis
    cannot follow count as gathers.

    Example::

        lowered = kiln.tir.lower(sch.mod["main"])
        x = kiln.autotune.extract_features(lowered, "llvm")

    Raises:
        KilnValueError: the function still has blocks (lower it first).
        KilnTypeError: lowered is not a PrimFunc, or target is not a target.
    """
    api = "kiln.autotune.extract_features"
    return _core.extract_features(lowered, _target_handle(target, api), num_cores)


@_value_class
class PriorEstimate:
    """The analytical prior's estimate of one call of a lowered function.

    Attributes:
        cycles: estimated cycles of one call.
        operations: arithmetic operations of one call (an FMA counts 2), or elements stored
            when there is no arithmetic.
        throughput: operations / cycles, the prior (higher is faster).
        compute_cycles, memory_cycles, latency_cycles: summed over the stores, before the
            parallel speedup; latency_cycles is the part of compute_cycles spent waiting on a
            reduction's dependence chain.
        parallel_efficiency: the share of the cores kept busy, weighted by cycles (GPU: of
            the multiprocessors' block slots in the busiest's rounds).
        accumulator_registers, spilled_registers: the register tile of the store with the
            most cycles: its accumulators in vector registers and those beyond the target's
            registers (GPU: of the kernel with the most cycles, the 4-byte words of a thread's
            local arrays and the estimated registers that spill).
    """

    cycles: float
    operations: float
    throughput: float
    compute_cycles: float
    memory_cycles: float
    latency_cycles: float
    parallel_efficiency: float
    accumulator_registers: float
    spilled_registers: float


def estimate_prior(lowered, target, num_cores=None):
    """The analytical prior's estimate of ``lowered`` on ``target`` as a
    :class:`PriorEstimate`. For a CPU: cycles from each store's vector instructions, its
    reduction's register tile (accumulators in registers, spills), its loops' working sets
    against the caches, and its parallel balance. For a GPU ("cuda", "opencl"): cycles of each
    kernel on its busiest multiprocessor, from the occupancy its registers, shared memory and
    threads allow, its warp instructions, shared-memory wavefronts and global-memory sectors,
    the latency its resident warps hide, and the chip's memory bandwidth; the multiprocessors
    are those of a typical part of the CUDA architecture (num_cores is not used; the tuner
    models the device it measures on, its multiprocessor count and architecture). The model is
    described in include/kiln/autotune/cost_model.h. Arguments as :func:`extract_features`.

    Raises:
        KilnValueError: the function still has blocks (lower it first).
        KilnTypeError: lowered is not a PrimFunc, or target is not a target.
    """
    api = "kiln.autotune.estimate_prior"
    return PriorEstimate(**_core.estimate_prior(lowered, _target_handle(target, api), num_cores))


def analytical_prior(lowered, target, num_cores=None):
    """The prior of ``lowered`` on ``target``: estimated arithmetic operations per cycle
    (higher is faster), from the same analysis as the features; it needs no measurements.
    Arguments as :func:`extract_features`; see :func:`estimate_prior` for its terms.

    Example::

        scores = [kiln.autotune.analytical_prior(kiln.tir.lower(f), "llvm") for f in funcs]

    Raises:
        KilnValueError: the function still has blocks (lower it first).
        KilnTypeError: lowered is not a PrimFunc, or target is not a target.
    """
    return estimate_prior(lowered, target, num_cores).throughput


def top_k_recall(scores, seconds, k):
    """How many of the ``k`` candidates with the highest ``scores`` are among the ``k`` with
    the shortest measured ``seconds``, as a fraction of k (1.0: the ranking found the k
    fastest). Ties go to the earlier candidate; k above the number of candidates is reduced to
    it. A failed run may be given as ``float("inf")`` seconds.

    Example::

        kiln.autotune.top_k_recall([0.9, 0.1, 0.5], [1e-3, 5e-3, 2e-3], k=2)   # 1.0

    Raises:
        KilnValueError: empty or mismatched inputs, k < 1, NaN, or seconds that are not
            positive.
        KilnTypeError: arguments that are not sequences of numbers or an int k.
    """
    api = "kiln.autotune.top_k_recall"
    return _core.top_k_recall(_numbers(scores, api, "scores"), _numbers(seconds, api, "seconds"),
                              k)


@_value_class
class UpdateResult:
    """What :meth:`CostModel.update` did.

    Attributes:
        rows: measured rows stored after the update, all groups.
        holdout_recall: top-k recall (k = the model's ``recall_k``) of XGBoost's prediction for
            the new batch before it was trained on it; NaN when no model was trained yet or no
            candidate of the batch ran.
        trained: whether a model is trained now (it needs a group with two different times).
        train_seconds: the time retraining took.
    """

    rows: int
    holdout_recall: float
    trained: bool
    train_seconds: float


class CostModel:
    """A learned ranking of candidate schedules by run time, blended with the analytical prior.

    Each measured candidate is a row of features (:func:`extract_features`) with its run time,
    in a group: one tuning task. XGBoost learns to rank the rows of each group (objective
    ``rank:pairwise`` or ``rank:ndcg``) from labels ``min_seconds / seconds`` of the group,
    retrained from scratch on every :meth:`update` (about 25 ms for 100 rows and 85 ms for
    2000 rows on one thread).
    :meth:`predict` blends the rank of XGBoost's score with the rank of the prior: XGBoost's
    weight is ``n / (n + half_weight_rows)`` for n measured rows of the group, and 0 below
    ``min_group_rows`` rows, so the prior alone guides the first trials.

    Options: num_rounds (30), max_depth (4), learning_rate (0.3), num_threads (1; 0: XGBoost's
    default), seed (0), objective ("rank:pairwise"), half_weight_rows (16), min_group_rows (8),
    recall_k (8).

    Example::

        model = kiln.autotune.CostModel()
        model.update(rows, seconds, group=0)        # measured candidates of one task
        scores = model.predict(new_rows, priors=priors, group=0)
        best = new_rows[np.argsort(-scores)[:16]]
        model.save("tune_gemm/cost_model")          # CostModel().load(...) resumes it

    Raises:
        KilnValueError: an option out of range or an unknown objective.
        KilnTypeError: an option of the wrong type or an unknown option.
    """

    top_k_recall = staticmethod(top_k_recall)

    def __init__(self, **options):
        """Creates an empty model; ``options`` as the class docstring lists them."""
        self._core = _core.CostModelCore(**options)

    def update(self, features, seconds, group=0):
        """Adds measured candidates of ``group`` (an int, one per tuning task) and retrains.

        features: a 2-D array, one row per candidate (a 1-D array is one row). seconds: the run
        time of each, ``float("inf")`` for a candidate that failed. Returns an
        :class:`UpdateResult` whose ``holdout_recall`` tells how well the model ranked this
        batch before seeing it.

        Raises:
            KilnValueError: empty or mismatched inputs, rows of the wrong length or with NaN or
                inf, times that are NaN, zero or negative. The model is unchanged then.
            KilnRuntimeError: XGBoost failed (the message names the call).
        """
        api = "CostModel.update"
        rows = _rows(features, api)
        result = self._core.update(rows, _numbers(seconds, api, "seconds"), group)
        return UpdateResult(**result)

    def predict(self, features, priors=None, group=None):
        """Scores of candidates, higher = faster, as a float64 array: the rank-normalized
        XGBoost score blended with the rank-normalized ``priors`` (one per row, e.g.
        :func:`analytical_prior`; None: XGBoost alone) by :meth:`xgboost_weight` of ``group``
        (None: all measured rows count). Without priors and without a trained model every
        score is 0.5.

        Raises:
            KilnValueError: rows of the wrong length, NaN or inf in them, or priors of another
                count than the rows.
        """
        api = "CostModel.predict"
        rows = _rows(features, api)
        prior_list = None if priors is None else _numbers(priors, api, "priors")
        return self._core.predict(rows, prior_list, group)

    def predict_model(self, features):
        """XGBoost's raw scores of the rows (higher = faster), or None when no model is
        trained; :meth:`predict` blends their ranks with the prior's.

        Raises:
            KilnValueError: rows of the wrong length, or NaN or inf in them.
        """
        if not self.trained:
            _rows(features, "CostModel.predict_model")
            return None
        return self._core.predict_model(_rows(features, "CostModel.predict_model"))

    def xgboost_weight(self, group=None):
        """The weight of XGBoost's ranking in :meth:`predict` for ``group`` (None: all rows):
        ``n / (n + half_weight_rows)`` for n measured rows, 0 below ``min_group_rows`` rows or
        without a trained model."""
        return self._core.xgboost_weight(group)

    def save(self, directory):
        """Writes the model to ``directory`` (created if needed): ``cost_model.json``, XGBoost's
        model, and ``cost_model_rows.txt``, the options and the measured rows, so that a model
        loaded from it predicts exactly what this one does and keeps learning from its rows.

        Raises:
            KilnRuntimeError: the files cannot be written.
        """
        self._core.save(os.fspath(directory) if isinstance(directory, os.PathLike) else directory)

    def load(self, directory):
        """Replaces this model by the one :meth:`save` wrote to ``directory``; returns self.

        Raises:
            KilnValueError: no model there, a damaged file (the message names it and the
                line), or a model saved with other features.
        """
        self._core.load(os.fspath(directory) if isinstance(directory, os.PathLike) else directory)
        return self

    @property
    def num_rows(self):
        """Measured rows, all groups."""
        return self._core.num_rows()

    def num_group_rows(self, group):
        """Measured rows of ``group``."""
        return self._core.num_group_rows(group)

    @property
    def trained(self):
        """Whether an XGBoost model is trained (it needs a group with two different times)."""
        return self._core.trained()

    @property
    def options(self):
        """The model's options, as a dict."""
        return dict(self._core.options())

    def __repr__(self):
        return (f"kiln.autotune.CostModel(rows={self.num_rows}, trained={self.trained}, "
                f"objective={self.options['objective']!r})")


__all__ = ["CostModel", "PriorEstimate", "UpdateResult", "analytical_prior", "estimate_prior",
           "extract_features", "feature_names", "top_k_recall"]
