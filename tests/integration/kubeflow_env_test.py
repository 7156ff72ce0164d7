"""muster started as Kubeflow starts torchrun: no flag, only the environment
the operator gives each pod, two nodes on loopback, a real job whose workers
check the place they are told; the agent's health endpoint answers 200 during
the job and each agent exits 0.

The variables, as the operators set them (loopback stands in for the pods'
service names; ports are free ones):

- Training operator v1, PyTorchJob with an elasticPolicy
  (pkg/controller.v1/pytorch/elastic.go, ElasticEnvVarGenerator):
  PET_RDZV_ENDPOINT (<job>-worker-0:<port>), PET_RDZV_BACKEND (c10d by
  default), PET_NNODES ("MIN:MAX", or the worker replicas when neither is
  given), PET_MAX_RESTARTS, PET_NPROC_PER_NODE, PET_RDZV_ID; and
  PYTHONUNBUFFERED=0 on every pod (envvar.go, setPodEnv).
- Training operator v1, PyTorchJob without one, Master and Worker replicas
  (envvar.go, setPodEnv; master.go, MasterEnvVarGenerator): MASTER_PORT,
  PET_MASTER_PORT, MASTER_ADDR, PET_MASTER_ADDR (<job>-master-0), WORLD_SIZE
  (replicas x nprocPerNode), RANK (the pod's index, the master 0),
  PET_NPROC_PER_NODE, PET_NODE_RANK (= RANK), PET_NNODES (replicas),
  PYTHONUNBUFFERED=0. WORLD_SIZE and RANK count pods; the agent must give
  each worker its own.
- Kubeflow Trainer v2, TrainJob on the torch-distributed runtime
  (pkg/runtime/framework/plugins/torch/torch.go, EnforceMLPolicy; names in
  pkg/constants): PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK (the Job's
  completion index), PET_MASTER_ADDR (<job>-node-0-0.<job>), PET_MASTER_PORT
  (29500, ContainerTrainerPort).

The health port comes from TORCHELASTIC_HEALTH_CHECK_PORT=0 (torchrun's
variable; a pod spec sets it beside the probe): each agent logs the port it
bound as event=health_listening.
"""
import json
import os
import re
import time
import urllib.error
import urllib.request

from harness import MUSTER, base_env, check, free_port, run_tests, start, tempdir, test, wait_for, \
    write_file

NPROC = 2
NODES = 2

# Each worker checks what it is told, writes it to OUT/rank<RANK>.json, and
# exits 0 once the test writes OUT/go (3 when told something inconsistent,
# 4 when the test never says go).
WORKER = r'''
import json, os, sys, time
out = sys.argv[1]
env = os.environ
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
local_rank, local_world = int(env["LOCAL_RANK"]), int(env["LOCAL_WORLD_SIZE"])
group_rank = int(env["GROUP_RANK"])
ok = (0 <= rank < world and 0 <= local_rank < local_world == NPROC
      and rank == group_rank * local_world + local_rank
      and env["MASTER_ADDR"] and int(env["MASTER_PORT"]) > 0)
tmp = os.path.join(out, "rank%d.tmp%d" % (rank, os.getpid()))
with open(tmp, "w") as f:
    json.dump({k: v for k, v in env.items()}, f)
os.replace(tmp, os.path.join(out, "rank%d.json" % rank))
if not ok:
    sys.exit(3)
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(out, "go")):
    if time.monotonic() > deadline:
        sys.exit(4)
    time.sleep(0.05)
'''.replace("NPROC", str(NPROC))

HEALTH_LINE = re.compile(r"event=health_listening host=\S+ port=(\d+)")


def pytorchjob_elastic(node, port):
    return {"PYTHONUNBUFFERED": "0", "PET_RDZV_ENDPOINT": f"127.0.0.1:{port}",
            "PET_RDZV_BACKEND": "c10d", "PET_NNODES": f"1:{NODES}", "PET_MAX_RESTARTS": "3",
            "PET_NPROC_PER_NODE": str(NPROC), "PET_RDZV_ID": "pytorchjob-elastic"}


def pytorchjob_static(node, port):
    return {"PYTHONUNBUFFERED": "0", "MASTER_PORT": str(port), "PET_MASTER_PORT": str(port),
            "MASTER_ADDR": "127.0.0.1", "PET_MASTER_ADDR": "127.0.0.1",
            "WORLD_SIZE": str(NODES * NPROC), "RANK": str(node), "PET_NPROC_PER_NODE": str(NPROC),
            "PET_NODE_RANK": str(node), "PET_NNODES": str(NODES)}


def trainer_v2(node, port):
    return {"PET_NNODES": str(NODES), "PET_NPROC_PER_NODE": str(NPROC),
            "PET_NODE_RANK": str(node), "PET_MASTER_ADDR": "127.0.0.1",
            "PET_MASTER_PORT": str(port)}


def get(port, path):
    """(status, body) of GET http://127.0.0.1:PORT/PATH."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def read(path):
    with open(path) as f:
        return f.read()


def run_job(variables_of):
    """Starts one agent per node with `variables_of(node, port)` as its only settings, checks
    the workers' places and each agent's health during the job, and that every agent exits 0."""
    out = tempdir()
    script = write_file(out, "worker.py", WORKER)
    dumps = os.path.join(out, "dumps")
    os.mkdir(dumps)
    port = free_port()
    agents, logs = [], []
    for node in range(NODES):
        env = base_env(TORCHELASTIC_HEALTH_CHECK_PORT="0", **variables_of(node, port))
        log_path = os.path.join(out, f"agent{node}.log")
        with open(log_path, "w") as log:
            agents.append(start([MUSTER, script, dumps], env=env, stdout=log, stderr=log))
        logs.append(log_path)

    def context():
        return "\n".join(f"agent {n} log:\n{read(p)}" for n, p in enumerate(logs))

    def health_ports():
        found = [HEALTH_LINE.search(read(p)) for p in logs]
        return [int(m.group(1)) for m in found] if all(found) else None

    check(wait_for(health_ports, 30), "no event=health_listening line", context())
    ports = health_ports()

    def placed():
        names = sorted(n for n in os.listdir(dumps) if n.endswith(".json"))
        if names != [f"rank{r}.json" for r in range(NODES * NPROC)]:
            return None
        seen = [json.loads(read(os.path.join(dumps, n))) for n in names]
        return seen if all(s["WORLD_SIZE"] == str(NODES * NPROC) for s in seen) else None

    check(wait_for(placed, 60, interval=0.1), "the workers never all ran in one generation",
          context())
    for rank, seen in enumerate(placed()):
        check(seen["LOCAL_RANK"] == str(rank % NPROC), f"rank {rank}: {seen['LOCAL_RANK']}")
        check(seen["LOCAL_WORLD_SIZE"] == str(NPROC), f"rank {rank}: {seen['LOCAL_WORLD_SIZE']}")
        check(seen["GROUP_RANK"] == str(rank // NPROC), f"rank {rank}: {seen['GROUP_RANK']}")
    masters = {(s["MASTER_ADDR"], s["MASTER_PORT"]) for s in placed()}
    check(len(masters) == 1, f"workers disagree on the store: {masters}")

    for node, health_port in enumerate(ports):
        status, body = get(health_port, "/healthz")
        check(status == 200 and body.startswith("ok"), f"agent {node}: /healthz {status} {body!r}",
              context())
        status, body = get(health_port, "/")
        check(status == 200, f"agent {node}: / {status} {body!r}")
        status, body = get(health_port, "/metrics")
        check(status == 200 and re.search(r"^muster_store_refused_total 0$", body, re.M),
              f"agent {node}: /metrics {status} {body!r}")
        check(re.search(r"^muster_agent_healthy 1$", body, re.M), f"agent {node}: {body!r}")

    write_file(dumps, "go", "")
    deadline = time.monotonic() + 60
    for node, agent in enumerate(agents):
        code = agent.wait(timeout=max(1, deadline - time.monotonic()))
        check(code == 0, f"agent {node} exited {code}", context())


@test
def pytorchjob_elastic_policy_variables_run_a_job():
    run_job(pytorchjob_elastic)


@test
def pytorchjob_master_and_workers_variables_run_a_job():
    run_job(pytorchjob_static)


@test
def trainer_v2_torch_runtime_variables_run_a_job():
    run_job(trainer_v2)


if __name__ == "__main__":
    run_tests()
