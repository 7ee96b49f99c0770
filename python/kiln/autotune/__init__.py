"""kiln's auto-tuner, with MetaSchedule's names: the tuning database (workloads and the measured
records of their candidate schedules in one SQLite file, :class:`Database`), the design space
(:class:`SpaceGenerator`), the runner, which builds, checks and times candidates in a worker
process that no candidate can take the run down with (:class:`LocalRunner`), and the program
features and cost model that rank candidates before they are measured (:class:`CostModel`); and the search that uses them all (:func:`tune_tir`, :func:`tune_tasks`,
:func:`compile_tir`)."""
from .cost_model import (CostModel, PriorEstimate, UpdateResult, analytical_prior,
                         estimate_prior, extract_features, feature_names, top_k_recall)
from .database import (Database, DatabaseWarning, Measurement, MergeSummary, TargetKey,
                       TuningRecord, Workload, IR_FORMAT_VERSION, SCHEMA_VERSION, STATUSES,
                       WORKLOAD_KEY_VERSION)
from .runner import FAULTS, LocalRunner, MeasureInput, MeasureResult, RunnerConfig, cpu_model_name
from .space import Candidate, SpaceGenerator
from .tune import TaskResult, TuneConfig, compile_tir, tune_tasks, tune_tir

__all__ = ["Database", "DatabaseWarning", "Measurement", "MergeSummary", "TargetKey",
           "TuningRecord", "Workload", "IR_FORMAT_VERSION", "SCHEMA_VERSION", "STATUSES",
           "WORKLOAD_KEY_VERSION", "Candidate", "SpaceGenerator", "FAULTS", "LocalRunner",
           "MeasureInput", "MeasureResult", "RunnerConfig", "cpu_model_name", "CostModel",
           "PriorEstimate", "UpdateResult", "analytical_prior", "estimate_prior",
           "extract_features", "feature_names", "top_k_recall", "TaskResult", "TuneConfig",
           "compile_tir", "tune_tasks", "tune_tir"]
