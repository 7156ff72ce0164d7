# The launcher with real worker processes (stdlib-only Python workers).
muster_integration_test(launcher launcher_test.py TIMEOUT 300 LABELS sanitize)
