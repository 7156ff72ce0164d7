# The first hour of a torchrun user, at the default log level: network waits
# that end naming the endpoint, quiet success, lost peers explained, counts
# that agree with the workers', --inject that says when it cannot fire,
# loopback-only listening for a job on one machine.
muster_integration_test(first_hour_agent first_hour_agent_test.py TIMEOUT 240)
