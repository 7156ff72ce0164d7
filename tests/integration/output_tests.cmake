# Worker output on the console as it comes: '\r' progress bars (hand-written
# and the real tqdm) read through a pipe with arrival times; --log-dir bytes.
muster_integration_test(output_live output_live_test.py TIMEOUT 180)
