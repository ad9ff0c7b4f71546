"""The watermark valve (``time/watermarks.py``): one subtask's watermark from its input channels, the minimum
over the active ones, never going down."""

from ministream.time.watermarks import WatermarkValve


def test_valve_is_the_minimum_over_channels():
    """A subtask's watermark is the minimum of its channels' latest watermarks."""
    valve = WatermarkValve(3)
    assert [valve.on_watermark(0, 30), valve.on_watermark(1, 10), valve.on_watermark(2, 20)] == [None, None, 10]
    assert valve.on_watermark(1, 40) == 20


def test_valve_never_goes_down():
    """A lower watermark on a channel changes nothing: the subtask's watermark never goes down."""
    valve = WatermarkValve(1)
    valve.on_watermark(0, 50)
    assert valve.on_watermark(0, 20) is None and valve.watermark == 50


def test_valve_channel_without_watermark_holds_the_minimum():
    """An active channel that has sent no watermark yet holds the subtask's watermark back."""
    valve = WatermarkValve(2)
    assert valve.on_watermark(0, 50) is None and valve.watermark is None


def test_valve_idle_channel_leaves_the_minimum():
    """When a channel goes idle the minimum is taken over the others, so the watermark can rise."""
    valve = WatermarkValve(2)
    valve.on_watermark(0, 10)
    valve.on_watermark(1, 30)
    assert valve.on_status(0, idle=True) == (30, None)
    assert valve.on_watermark(0, 99) is None  # ignored while idle


def test_valve_all_idle_flushes_and_goes_idle():
    """When every channel is idle the subtask goes idle, its watermark at the largest channel watermark."""
    valve = WatermarkValve(2)
    valve.on_watermark(0, 10)
    valve.on_watermark(1, 30)
    valve.on_status(1, idle=True)
    assert valve.on_status(0, idle=True) == (30, True)
    assert valve.on_status(1, idle=False) == (None, False)


def test_valve_returning_channel_rejoins_when_caught_up():
    """A channel back from idle behind the subtask's watermark is left out of the minimum until it catches up."""
    valve = WatermarkValve(2)
    valve.on_watermark(0, 10)
    valve.on_watermark(1, 30)
    valve.on_status(0, idle=True)  # watermark 30
    valve.on_status(0, idle=False)  # back at 10: unaligned
    assert valve.on_watermark(1, 40) == 40  # channel 0 does not hold it at 10
    assert valve.on_watermark(0, 35) is None
    assert valve.on_watermark(0, 45) is None and valve.on_watermark(1, 60) == 45  # caught up: back in the min
