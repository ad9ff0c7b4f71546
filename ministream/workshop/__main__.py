"""``python -m ministream.workshop list | copy DIR | check | build | timings``: the workshop's commands, the
same as ``ministream workshop ...`` (``ministream.workshop.commands``)."""

from __future__ import annotations

import sys

from ministream.workshop.commands import main

if __name__ == "__main__":
    sys.exit(main())
