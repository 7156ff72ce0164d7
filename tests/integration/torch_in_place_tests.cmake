# In-place recovery of a real PyTorch DDP script (examples/torch/ddp_in_place.py
# with the muster Python package), once per torch version: worker SIGKILL and
# hang, --recovery restart and a script without the package, an elastic agent
# SIGKILL or SIGSTOP, a host's link cut (network namespaces, root) and a node
# joining (tests/integration/torch_in_place_test.py).
foreach(version 1.13 2.6 2.14)
  muster_integration_test(torch_in_place_${version} torch_in_place_test.py TIMEOUT 400
                          LABELS torch in_place ENV MUSTER_TORCH_VERSIONS=${version})
endforeach()
