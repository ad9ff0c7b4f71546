"""Tools: the command line, benchmarks, fuzzing, diagrams, plots, docs and the local Spark cluster."""
