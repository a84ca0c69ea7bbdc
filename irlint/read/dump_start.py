"""How a graph dump's text starts: what tells a dump from other content by its first bytes."""

from __future__ import annotations

import re

# How a graph dump starts: "# IR entry: @g" (2.x), "#IR entry      : @g" (1.x, 2.0), or what opens
# an analyze_fail.ir (2.0-2.2: a numbered note; 2.3 and later: a banner)
DUMP_START = re.compile(
    rb"#\s*IR entry\s*:|# 1\.This file shows the parsed IR info"
    rb"|# =+\r?\n# The following shows the (?:last analyze fail|IR when the function graphs)"
)


def is_dump_start(head: bytes) -> bool:
    return DUMP_START.match(head.lstrip(b"\xef\xbb\xbf")) is not None
