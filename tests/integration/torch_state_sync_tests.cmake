# The muster package's state agreement (python/muster/state_sync.py: JSON and
# tensors, never a pickle; a peer's pickle refused) on each real torch
# version (tests/integration/torch_versions.py): Debian's 1.13 on the host,
# 2.6 and 2.14 in chroots built by scripts/torch_chroots.sh (root only;
# skipped with the reason otherwise).
foreach(version 1.13 2.6 2.14)
  muster_integration_test(torch_state_sync_${version} torch_state_sync_test.py TIMEOUT 120
                          LABELS torch in_place ENV MUSTER_TORCH_VERSIONS=${version})
endforeach()
