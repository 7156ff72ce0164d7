# Debian's PyTorch as a real client of the launcher and its worker store.
muster_integration_test(torch torch_test.py TIMEOUT 600 LABELS torch)
