"""An installed muster, as `cmake --install` lays it out, used from outside.

Installs the build tree under a temporary prefix and checks that:
  - every installed file is where packaging/CMakeLists.txt says, and no
    private header (Gloo, NCCL) is among the headers;
  - muster, musterd, muster-train --version and pkg-config agree on the
    project version;
  - a program outside the tree (tests/packaging/consumer) finds the package
    with find_package(muster), builds, every installed header compiles on
    its own, and two ranks of it allreduce under the installed muster;
  - the same program builds with pkg-config alone;
  - the installed musterd starts from the installed, commented config.
Usage: installed_tree_test.py (MUSTER_BIN_DIR names BUILD/bin, as ctest sets it)
"""
import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import check, test  # noqa: E402

BUILD_DIR = os.path.dirname(harness.BIN_DIR)
CONSUMER = os.path.join(harness.SOURCE_DIR, "tests", "packaging", "consumer")
ROOT = harness.tempdir()  # the prefix and the consumer's builds; removed at exit
_prefix = None


def project_version():
    return cache_value("CMAKE_PROJECT_VERSION")


def cache_value(name):
    with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
        found = re.search(rf"^{name}:[A-Z]+=(.*)$", f.read(), re.M)
    return found.group(1) if found else ""


def prefix():
    """The installed tree, made once for all tests."""
    global _prefix
    if _prefix is None:
        for name in ("CMAKE_INSTALL_SYSCONFDIR", "MUSTER_SYSTEMD_UNIT_DIR"):
            if os.path.isabs(cache_value(name)):
                # scripts/package.sh's build: installing it outside DESTDIR
                # would write into the machine's /etc.
                raise harness.Skip(f"{name}={cache_value(name)} is absolute: this build installs "
                                   "outside any --prefix (a package build)")
        _prefix = os.path.join(ROOT, "prefix")
        code, out, err = harness.run(["cmake", "--install", BUILD_DIR, "--prefix", _prefix],
                                     timeout=120)
        check(code == 0, f"cmake --install exited {code}", out, err)
    return _prefix


def one(pattern):
    found = glob.glob(os.path.join(prefix(), pattern))
    check(len(found) == 1, f"expected one {pattern} under {prefix()}, found {found}")
    return found[0]


@test
def install_puts_each_file_in_place():
    for path in ["bin/muster", "bin/musterd", "bin/muster-train",
                 "lib*/libmuster_runtime.so", "lib*/libmuster_runtime.so.0",
                 "include/muster/common/version.h",
                 "include/muster/worker_runtime/comm/communicator.h",
                 "include/muster/worker_runtime/bootstrap/context.h",
                 "lib*/cmake/muster/musterConfig.cmake",
                 "lib*/cmake/muster/musterConfigVersion.cmake",
                 "lib*/cmake/muster/musterTargets.cmake",
                 "lib*/pkgconfig/muster-runtime.pc",
                 "share/man/man1/muster.1", "share/man/man1/musterd.1",
                 "share/man/man1/muster-train.1",
                 "share/bash-completion/completions/muster",
                 "share/bash-completion/completions/musterd",
                 "lib/systemd/system/musterd.service", "etc/muster/musterd.json",
                 "share/muster/grafana/muster-dashboard.json"]:
        one(path)
    private = glob.glob(os.path.join(prefix(), "include/muster/worker_runtime/comm/*/"))
    check(not private, f"private headers installed: {private}")
    unit = open(one("lib/systemd/system/musterd.service")).read()
    for line in ["Restart=always", "User=musterd", "NoNewPrivileges=yes", "ProtectSystem=strict",
                 "/musterd --config /", "/muster/musterd.json"]:
        check(line in unit, f"musterd.service lacks {line!r}", unit)


@test
def every_program_and_pkg_config_print_the_project_version():
    version = project_version()
    for program in ["muster", "musterd", "muster-train"]:
        code, out, err = harness.run([os.path.join(prefix(), "bin", program), "--version"])
        check(code == 0 and out.strip() == f"{program} {version}",
              f"{program} --version: exit {code}, {out!r}, want '{program} {version}'", err)
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(one("lib*/pkgconfig/muster-runtime.pc")))
    out = subprocess.run(["pkg-config", "--modversion", "muster-runtime"], env=env,
                         capture_output=True, text=True, check=True).stdout
    check(out.strip() == version, f"pkg-config --modversion: {out!r}, want {version}")


@test
def find_package_consumer_builds_and_two_ranks_allreduce():
    build = os.path.join(ROOT, "consumer-cmake")
    code, out, err = harness.run(["cmake", "-S", CONSUMER, "-B", build,
                                  f"-DCMAKE_PREFIX_PATH={prefix()}"], timeout=120)
    check(code == 0, "configuring the consumer failed", out, err)
    check(f"muster {project_version()} from {prefix()}" in out, "found some other muster", out)
    code, out, err = harness.run(["cmake", "--build", build, "--parallel", str(os.cpu_count())],
                                 timeout=300)
    check(code == 0, "building the consumer (or an installed header alone) failed", out, err)
    code, out, err = harness.run([os.path.join(prefix(), "bin", "muster"), "--standalone",
                                  "--nproc-per-node", "2", "--no-python",
                                  os.path.join(build, "consumer")], timeout=60)
    check(code == 0, f"consumer under the installed muster exited {code}", out, err)
    for rank in (0, 1):
        check(f"consumer rank={rank} world=2 sum=1 " in out, f"no line from rank {rank}", out, err)


@test
def pkg_config_consumer_builds_and_runs():
    pc_dir = os.path.dirname(one("lib*/pkgconfig/muster-runtime.pc"))
    env = dict(os.environ, PKG_CONFIG_PATH=pc_dir)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "muster-runtime"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    program = os.path.join(ROOT, "consumer-pkg-config")
    code, out, err = harness.run(["c++", "-std=c++20", "-Wall", "-Werror",
                                  os.path.join(CONSUMER, "main.cc"), *flags, "-o", program],
                                 timeout=180)
    check(code == 0, "c++ with pkg-config's flags failed", " ".join(flags), out, err)
    run_env = harness.base_env(LD_LIBRARY_PATH=os.path.dirname(one("lib*/libmuster_runtime.so")))
    for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        run_env.pop(key, None)
    code, out, err = harness.run([program], env=run_env)
    check(code == 0 and "consumer rank=0 world=1 sum=0 " in out,
          f"one-process consumer exited {code}", out, err)


@test
def installed_musterd_starts_from_the_installed_config():
    config = one("etc/muster/musterd.json")
    check("//" in open(config).read(), "the installed config has no comment to prove they parse")
    proc = harness.start([os.path.join(prefix(), "bin", "musterd"), "--config", config,
                          "--host", "127.0.0.1", "--port", "0"])
    line = proc.stdout.readline()
    check(re.match(r"musterd listening on 127\.0\.0\.1:\d+$", line.strip()),
          f"musterd printed {line!r}", proc.stderr.read() if proc.poll() is not None else "")


try:
    harness.run_tests()
finally:
    shutil.rmtree(ROOT, ignore_errors=True)
