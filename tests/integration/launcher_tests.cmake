# The launcher with real worker processes (stdlib-only Python workers).
muster_integration_test(launcher launcher_test.py TIMEOUT 300 LABELS sanitize)
# Built-in fault injection (--inject) with muster-train workers and musterd.
muster_integration_test(inject inject_test.py TIMEOUT 300 LABELS sanitize)
