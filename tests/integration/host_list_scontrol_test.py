"""SLURM's `scontrol show hostnames` agrees with tests/unit/host_list_cases.txt.

The table says what muster's host-list parser (common/host_list.h) gives for
each list and, for the rows where scontrol differs, what scontrol prints
instead. This runs scontrol on every row, with a throwaway slurm.conf (it
needs one, but `show hostnames` contacts no daemon), and checks it prints:
  - a row without a flag: exactly the expected hosts, or "Invalid hostlist"
    for an expected error;
  - a flagged row (suffix, stricter, order): exactly the SCONTROL column, and
    not what muster gives, so a flag cannot outlive the difference it records.
Without scontrol the test is skipped (exit 77).
"""
import os
import shutil
import subprocess
import tempfile

from harness import SOURCE_DIR, Skip, check, run_tests, test

CASES = os.path.join(SOURCE_DIR, "tests", "unit", "host_list_cases.txt")
FLAGS = ("suffix", "stricter", "order")
SLURM_CONF = "ClusterName=muster-test\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n"


def read_cases():
    """[(line number, list, expected, flag, scontrol)]; flag and scontrol are None when absent."""
    cases = []
    with open(CASES) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            close = line.find("'", 1)
            check(line.startswith("'") and close > 0 and line[close + 1:close + 2] == "\t",
                  f"host_list_cases.txt:{number}: not 'LIST'<TAB>...: {line!r}")
            fields = line[close + 2:].split("\t")
            check(len(fields) in (1, 3) and (len(fields) == 1 or fields[1] in FLAGS),
                  f"host_list_cases.txt:{number}: bad fields {fields!r}")
            flag, scontrol = (fields[1], fields[2]) if len(fields) == 3 else (None, None)
            cases.append((number, line[1:close], fields[0], flag, scontrol))
    return cases


def as_printed(expected):
    """A table column as scontrol would print it: "!error", "(nothing)" or the hosts."""
    if expected.startswith("!error"):
        return "!error"
    return expected


def scontrol_hostnames(scontrol, host_list, env):
    """What `scontrol show hostnames LIST` prints, in the table's notation."""
    proc = subprocess.run([scontrol, "show", "hostnames", host_list], env=env, capture_output=True,
                          text=True, timeout=30)
    # 22.05 exits 0 either way and writes "Invalid hostlist: ..." to stdout or stderr.
    if "Invalid hostlist" in proc.stdout + proc.stderr:
        return "!error"
    check(proc.returncode == 0 and not proc.stderr,
          f"scontrol show hostnames {host_list!r}: exit {proc.returncode}", proc.stderr)
    hosts = proc.stdout.split("\n")
    if hosts and hosts[-1] == "":
        hosts.pop()
    return " ".join(hosts) if hosts else "(nothing)"


@test
def scontrol_prints_what_the_table_says():
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        raise Skip("scontrol is not installed (Debian: apt-get install slurm-client)")
    cases = read_cases()
    check(len(cases) >= 30, f"only {len(cases)} cases in {CASES}")
    with tempfile.TemporaryDirectory(prefix="muster-slurm-conf-") as conf_dir:
        conf = os.path.join(conf_dir, "slurm.conf")
        with open(conf, "w") as f:
            f.write(SLURM_CONF)
        # Without an argument scontrol would read SLURM_JOB_NODELIST: no SLURM_* but the config.
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = conf
        version = subprocess.run([scontrol, "--version"], env=env, capture_output=True, text=True)
        print(f"using {scontrol}: {version.stdout.strip()}", flush=True)
        mismatches = []
        for number, host_list, expected, flag, scontrol_prints in cases:
            printed = scontrol_hostnames(scontrol, host_list, env)
            if flag is None:
                want = as_printed(expected)
            else:
                want = scontrol_prints
                if printed == as_printed(expected):
                    mismatches.append(f"host_list_cases.txt:{number}: '{host_list}' is flagged "
                                      f"{flag} but scontrol now agrees with muster: {printed}")
                    continue
            if printed != want:
                mismatches.append(f"host_list_cases.txt:{number}: '{host_list}': scontrol prints "
                                  f"{printed!r}, the table says {want!r}")
        check(not mismatches, f"{len(mismatches)} of {len(cases)} rows disagree with scontrol",
              *mismatches)
        print(f"{len(cases)} rows agree with scontrol "
              f"({sum(1 for c in cases if c[3])} flagged where muster differs)", flush=True)


if __name__ == "__main__":
    run_tests()
