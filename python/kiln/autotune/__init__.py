"""kiln's auto-tuner, with MetaSchedule's names: the tuning database (workloads and the measured
records of their candidate schedules in one SQLite file, :class:`Database`) and the design space
(:class:`SpaceGenerator`)."""
from .database import (Database, DatabaseWarning, Measurement, MergeSummary, TargetKey,
                       TuningRecord, Workload, IR_FORMAT_VERSION, SCHEMA_VERSION, STATUSES,
                       WORKLOAD_KEY_VERSION)
from .space import Candidate, SpaceGenerator

__all__ = ["Database", "DatabaseWarning", "Measurement", "MergeSummary", "TargetKey",
           "TuningRecord", "Workload", "IR_FORMAT_VERSION", "SCHEMA_VERSION", "STATUSES",
           "WORKLOAD_KEY_VERSION", "Candidate", "SpaceGenerator"]
