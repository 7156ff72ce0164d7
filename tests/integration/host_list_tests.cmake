# SLURM's own `scontrol show hostnames` against tests/unit/host_list_cases.txt,
# the table muster's host-list parser is unit-tested with (skipped without
# scontrol).
muster_integration_test(host_list_scontrol host_list_scontrol_test.py TIMEOUT 120 LABELS host_list)
