"""The scanned script's own module: its module-level imports are warm."""
import fractions  # noqa: F401
