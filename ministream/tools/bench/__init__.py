"""Benchmarks: how fast ministream runs, against a plain Python loop and against Spark, in one command.

``ministream bench`` prints a table of named figures; ``--json`` prints them as one JSON object, with a
description of the machine. Nothing here is a test: timings vary from machine to machine, so they are
reported, never asserted. The reference is *the floor*: a plain Python loop with dicts doing the same keyed
tumbling-window count with a bounded-out-of-orderness watermark, measured in the same run on the same events,
so the ratio ``tumbling_count_ratio_to_loop`` means something on any machine.

The workload of the tumbling figures: 1,000,000 events, 1,000 keys, windows of 1,000 ms, a watermark delay of
100 ms, event times rising by about 1 ms per event with up to 50 ms of disorder. ministream runs it in the
micro-batch model, 100 batches of 10,000 events; the loop advances its watermark at every event. Engine
figures are CPU seconds, the best of a few runs (``best_cpu_seconds``); Spark and workshop figures are wall-clock
seconds (Spark works in other processes and threads).

The package: ``workload.py`` (events, pipelines, timing), ``engine.py`` (the engine against the loop, memory),
``checkpoints.py`` (snapshot and restore of 10k to 1M keys), ``spark.py`` (the same events through PySpark,
every operator beside the engine, and the workshop's comparisons), ``curves.py`` (the cost per event as the run
and the batches grow, the floors' beside the engine's as the batches grow) and ``report.py`` (the command, the targets and the page).
"""
