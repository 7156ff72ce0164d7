#include <catch2/catch.hpp>
#include <set>

#include "tests/unit/launcher_test_support.h"

#include "launcher/plan/python_package.h"
#include "launcher/plan/worker_env.h"

using namespace muster;
using muster::testing::EnvOf;

namespace {

const PackageLayout kLayout{"/src/muster/build", "/src/muster/python", "lib/python3/dist-packages"};

auto HasPackageIn(std::set<std::string> dirs) {
  return [dirs](const std::string& dir) { return dirs.count(dir) > 0; };
}

}  // namespace

TEST_CASE("a binary in its build tree finds its source tree's package") {
  const auto found = HasPackageIn({"/src/muster/python"});
  CHECK(PythonPackageDir("/src/muster/build/bin/muster", kLayout, found) == "/src/muster/python");
  // A build directory's name is not a prefix of another's.
  CHECK_FALSE(PythonPackageDir("/src/muster/build-asan/bin/muster", kLayout, found));
  CHECK_FALSE(PythonPackageDir("/src/muster/build/bin/muster", kLayout, HasPackageIn({})));
}

TEST_CASE("an installed binary finds the package installed beside it, but not under /usr") {
  const auto found = HasPackageIn({"/opt/muster/lib/python3/dist-packages",
                                   "/usr/lib/python3/dist-packages", "/lib/python3/dist-packages"});
  CHECK(PythonPackageDir("/opt/muster/bin/muster", kLayout, found) ==
        "/opt/muster/lib/python3/dist-packages");
  // Debian's python3 already searches it; on PYTHONPATH it would come before a venv's packages.
  CHECK_FALSE(PythonPackageDir("/usr/bin/muster", kLayout, found));
  CHECK(PythonPackageDir("/bin/muster", kLayout, found) == "/lib/python3/dist-packages");
  CHECK_FALSE(PythonPackageDir("/opt/muster/libexec/muster", kLayout, found));
  CHECK_FALSE(PythonPackageDir("/home/u/bin/muster", kLayout, found));
}

TEST_CASE("the user's PYTHONPATH comes first and the package is not added twice") {
  CHECK(PythonPathWith(std::nullopt, "/p") == "/p");
  CHECK(PythonPathWith(std::string(), "/p") == "/p");
  CHECK(PythonPathWith(std::string("/mine:/other"), "/p") == "/mine:/other:/p");
  CHECK(PythonPathWith(std::string("/mine:/p"), "/p") == "/mine:/p");
  CHECK(PythonPathWith(std::string("/p/x"), "/p") == "/p/x:/p");
}

TEST_CASE("the agent's own variables: the signals torch forwards and the package's path") {
  const auto with =
      AgentVariables({"SIGTERM", "SIGUSR1"}, std::string("/p"), EnvOf({{"PYTHONPATH", "/mine"}}));
  CHECK(with.at("TORCHELASTIC_SIGNALS_TO_HANDLE") == "SIGTERM,SIGUSR1");
  CHECK(with.at("PYTHONPATH") == "/mine:/p");
  const auto without = AgentVariables({"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"}, std::nullopt,
                                      EnvOf({{"PYTHONPATH", "/mine"}}));
  CHECK(without.at("TORCHELASTIC_SIGNALS_TO_HANDLE") == "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  CHECK(without.count("PYTHONPATH") == 0);
}
