"""Operators: the stateful steps (watermark, aggregate, windows, sessions, joins, deduplication, process functions) and the planner that picks one for each step of a plan."""
