# Real PyTorch as a client of the launcher and its worker store, once per
# version (tests/integration/torch_versions.py): Debian's 1.13 on the host,
# 2.6 and 2.14 in chroots built by scripts/torch_chroots.sh (root only;
# skipped with the reason otherwise).
foreach(version 1.13 2.6 2.14)
  muster_integration_test(torch_${version} torch_test.py TIMEOUT 600 LABELS torch
                          ENV MUSTER_TORCH_VERSIONS=${version})
endforeach()
# The same tests with warm workers off (--no-warm-workers): torch 1.13 on the
# host. 2.6 and 2.14 run cold by hand (MUSTER_TORCH_VERSIONS=2.6,2.14
# MUSTER_TEST_WARM=off torch_test.py); see docs/testing.md.
muster_integration_test(torch_1.13_cold torch_test.py TIMEOUT 600 LABELS torch
                        ENV MUSTER_TORCH_VERSIONS=1.13 MUSTER_TEST_WARM=off)
# Progress from unmodified scripts: the warm worker's step hooks
# (launcher/process/warm/step_hooks.py), once per version.
foreach(version 1.13 2.6 2.14)
  muster_integration_test(step_hooks_${version} step_hooks_test.py TIMEOUT 600 LABELS torch
                          ENV MUSTER_TORCH_VERSIONS=${version})
  # The slow rank by compute time (the 1.13 entry also runs the slow-input
  # and the fault-free cases).
  muster_integration_test(torch_straggler_${version} torch_straggler_test.py TIMEOUT 600
                          LABELS torch ENV MUSTER_TORCH_VERSIONS=${version})
endforeach()
