# Kubernetes: muster started with only the variables the Kubeflow training
# operator (PyTorchJob, elastic and static) and Trainer v2 set, two nodes on
# loopback, with the agent's health endpoint during the job; and the health
# endpoint's verdicts against a real musterd.
muster_integration_test(kubeflow_env kubeflow_env_test.py TIMEOUT 180 LABELS sanitize)
muster_integration_test(agent_health agent_health_test.py TIMEOUT 180 LABELS sanitize)
