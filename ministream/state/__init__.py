"""Keyed state: key groups, the keyed state backend and its primitives, time-to-live, copy on write, and the changes since a snapshot."""
