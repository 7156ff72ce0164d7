# The command lines of the first hour, with the real binaries: argparse-style
# abbreviations (against torch's own parser), musterd and `muster status`
# answering like muster, and musterd's bash completion.
muster_integration_test(cli_first_hour cli_first_hour_test.py TIMEOUT 240)
