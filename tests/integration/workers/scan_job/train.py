"""A script whose imports the warm process scans (warm_workers_test.py):
the standard library's `decimal` directly, `fractions` through its own
module helpers.py, and `colorsys` only inside a function (not scanned)."""
import decimal  # noqa: F401
import json  # noqa: F401
import sys  # noqa: F401

import helpers  # noqa: F401 - the script's own module: scanned, not imported warm


def later():
    import colorsys  # noqa: F401 - in a function: imported when called, not warm

