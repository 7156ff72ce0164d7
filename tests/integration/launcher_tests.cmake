# The launcher with real worker processes (stdlib-only Python workers).
muster_integration_test(launcher launcher_test.py TIMEOUT 300 LABELS sanitize)
# Built-in fault injection (--inject) with muster-train workers and musterd.
muster_integration_test(inject inject_test.py TIMEOUT 300 LABELS sanitize)
# Warm workers: warm and cold starts compared field by field, the fallback,
# DataLoader processes, no orphans (real torch 1.13).
muster_integration_test(warm_workers warm_workers_test.py TIMEOUT 300)
