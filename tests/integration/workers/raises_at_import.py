"""A module whose import fails: `--warm-import raises_at_import` makes the
warm process unusable, and workers must start cold."""
raise RuntimeError("raises_at_import: this module fails on purpose")
