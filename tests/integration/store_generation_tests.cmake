# The worker store is fresh per generation: keys and connections of an earlier
# generation never reach a later one.
muster_integration_test(store_generations store_generations_test.py TIMEOUT 120 LABELS store elastic)
