# The first hour of a torchrun user, with real processes: --log-dir never
# writes over a run, the report's error files exist after exit, commands that
# cannot work are refused before anything starts, the no-torch hint, and a
# failure reported once.
muster_integration_test(first_hour_runs first_hour_runs_test.py TIMEOUT 300 LABELS sanitize)
