"""Totals per key and 10-second window, emitted once the watermark passes the window's end."""

from ministream import Count, Sum, Tumbling

FIELDS = {"key": str, "value": float}  # every event also has its time, ts
OUTPUT_MODE = "append"


def pipeline(events):
    watermarked = events.with_watermark("watermark", "ts", "5 seconds")
    return watermarked.key_by("key").window("totals", Tumbling("10 seconds"), count=Count(), sum=Sum("value"))
