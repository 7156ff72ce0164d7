# In-place recovery of a real FSDP2/HSDP script (examples/torch/fsdp_in_place.py,
# muster.ShardedInPlace) on Debian's torch 2.6 and 2.14, unwrapped: HSDP 2x2
# and FSDP 1x4 with the peer copy after a worker SIGKILL, HSDP across two
# elastic agents after an agent SIGKILL, and the DDP example without the
# no-libuv wrapper (tests/integration/torch_sharded_test.py). Torch 1.13 has
# no FSDP2.
foreach(version 2.6 2.14)
  muster_integration_test(torch_sharded_${version} torch_sharded_test.py TIMEOUT 400
                          LABELS torch in_place ENV MUSTER_TORCH_VERSIONS=${version})
endforeach()
