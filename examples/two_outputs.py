"""Totals per key and 10-second window, and every event over 2 as it comes: two outputs of one stream."""

from ministream import Count, Sum, Tumbling

FIELDS = {"key": str, "value": float}  # every event also has its time, ts


def pipeline(events):
    watermarked = events.with_watermark("watermark", "ts", "5 seconds")
    totals = watermarked.key_by("key").window("totals", Tumbling("10 seconds"), count=Count(), sum=Sum("value"))
    big = watermarked.filter("big", lambda row: row["value"] > 2, columns="value")
    return {"per_window": totals, "big_events": big}  # each output is its own sink, and its own query in Spark
