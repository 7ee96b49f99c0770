"""kiln's auto-tuner, with MetaSchedule's names. For now its tuning database: workloads and the
measured records of their candidate schedules in one SQLite file (see :class:`Database`)."""
from .database import (Database, DatabaseWarning, Measurement, MergeSummary, TargetKey,
                       TuningRecord, Workload, IR_FORMAT_VERSION, SCHEMA_VERSION, STATUSES,
                       WORKLOAD_KEY_VERSION)

__all__ = ["Database", "DatabaseWarning", "Measurement", "MergeSummary", "TargetKey",
           "TuningRecord", "Workload", "IR_FORMAT_VERSION", "SCHEMA_VERSION", "STATUSES",
           "WORKLOAD_KEY_VERSION"]
