"""The core: the plan (a dataflow of typed steps and its lineage), operators and their context, the physical graph that runs them, and the sources, sinks, traces and accounting of a run."""
