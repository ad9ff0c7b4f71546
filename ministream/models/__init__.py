"""Execution models: micro-batches as Spark runs them, and rows one at a time as Flink runs them."""
