# The launcher with real worker processes (stdlib-only Python workers).
muster_integration_test(launcher launcher_test.py TIMEOUT 300 LABELS sanitize)
# Built-in fault injection (--inject) with muster-train workers and musterd.
muster_integration_test(inject inject_test.py TIMEOUT 300 LABELS sanitize)
# Warm workers: warm and cold starts compared field by field, the fallback,
# DataLoader processes, no orphans (real torch 1.13).
muster_integration_test(warm_workers warm_workers_test.py TIMEOUT 300)
# Workers import the muster Python package from a source build and from a
# `cmake --install` prefix without PYTHONPATH; the user's PYTHONPATH first;
# TORCHELASTIC_SIGNALS_TO_HANDLE as torchrun 2.x sets it.
muster_integration_test(python_package python_package_test.py TIMEOUT 180)
