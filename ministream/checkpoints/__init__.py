"""Checkpoints: barriers, the coordinator, storage, incremental checkpoints, serialization, exactly-once sinks and recovery."""
