"""ministream: learn stateful stream processing from a small engine checked against Spark."""
