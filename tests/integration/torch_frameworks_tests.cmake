# A framework's trainer (a Hugging Face Trainer: transformers and accelerate in
# the sid chroot, torch 2.14) under muster and torchrun 2.14: the same loss,
# the framework imported warm, a killed worker restarted under both
# (tests/integration/torch_frameworks_test.py).
muster_integration_test(torch_frameworks_2.14 torch_frameworks_test.py TIMEOUT 400
                        LABELS torch ENV MUSTER_TORCH_VERSIONS=2.14)
