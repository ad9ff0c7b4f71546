"""Time: units, the processing-time clock, watermarks, windows, time ranges, timers and lateness."""
