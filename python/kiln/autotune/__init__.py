"""kiln's auto-tuner, with MetaSchedule's names: the tuning database (workloads and the measured
records of their candidate schedules in one SQLite file, see :class:`Database`), program features
of lowered candidates and the cost model that ranks them (see :class:`CostModel`)."""
from .cost_model import (CostModel, PriorEstimate, UpdateResult, analytical_prior,
                         estimate_prior, extract_features, feature_names, top_k_recall)
from .database import (Database, DatabaseWarning, Measurement, MergeSummary, TargetKey,
                       TuningRecord, Workload, IR_FORMAT_VERSION, SCHEMA_VERSION, STATUSES,
                       WORKLOAD_KEY_VERSION)

__all__ = ["CostModel", "Database", "DatabaseWarning", "Measurement", "MergeSummary",
           "PriorEstimate", "TargetKey", "TuningRecord", "UpdateResult", "Workload",
           "IR_FORMAT_VERSION", "SCHEMA_VERSION", "STATUSES", "WORKLOAD_KEY_VERSION",
           "analytical_prior", "estimate_prior", "extract_features", "feature_names",
           "top_k_recall"]
