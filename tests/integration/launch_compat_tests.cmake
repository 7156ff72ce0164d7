# torchrun and torch.distributed.launch compatibility of the launcher: GPU
# visibility and LOCAL_RANK, the root-cause error file, the newest torchrun
# flags and `muster launch` (stdlib workers, and torch 1.13's @record).
muster_integration_test(launch_compat launch_compat_test.py TIMEOUT 300 LABELS sanitize)
