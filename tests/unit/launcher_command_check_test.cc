#include <catch2/catch.hpp>
#include <map>

#include "launcher/process/command_check.h"

using namespace muster;

namespace {

// A machine with the given paths and the modules the interpreter finds.
struct FakeMachine {
  std::map<std::string, PathKind> paths;
  std::map<std::string, ModuleLookup> modules;
  std::vector<std::string> lookups;  // "interpreter module", in order

  CommandProbe Probe() {
    return CommandProbe{[this](const std::string& path) {
                          auto it = paths.find(path);
                          return it == paths.end() ? PathKind::kMissing : it->second;
                        },
                        [this](const std::string& interpreter, const std::string& name) {
                          lookups.push_back(interpreter + " " + name);
                          auto it = modules.find(name);
                          return it == modules.end() ? ModuleLookup::kNotFound : it->second;
                        }};
  }
};

LaunchOptions Options(std::string script) {
  LaunchOptions o;
  o.python = "python3";
  o.script = std::move(script);
  return o;
}

LaunchPlan Plan() {
  LaunchPlan plan;
  plan.executable = "/usr/bin/python3";
  return plan;
}

Status Check(const LaunchOptions& o, FakeMachine& machine) {
  return CheckWorkerCommand(o, Plan(), "/work", machine.Probe());
}

}  // namespace

TEST_CASE("a script that exists passes and a missing one is named with the directory",
          "[command]") {
  FakeMachine machine;
  machine.paths = {{"train.py", PathKind::kFile}, {"/abs/train.py", PathKind::kFile}};
  CHECK(Check(Options("train.py"), machine).ok());
  CHECK(Check(Options("/abs/train.py"), machine).ok());
  const Status missing = Check(Options("trian.py"), machine);
  CHECK(missing.code() == Status::Code::kInvalidArgument);
  CHECK(missing.message() == "script 'trian.py': no such file (relative to /work)");
  CHECK(Check(Options("/abs/nope.py"), machine).message() == "script '/abs/nope.py': no such file");
  CHECK(machine.lookups.empty());
}

TEST_CASE("a directory runs only when it has __main__.py, as with python", "[command]") {
  FakeMachine machine;
  machine.paths = {{"app", PathKind::kDirectory},
                   {"app/__main__.py", PathKind::kFile},
                   {"src", PathKind::kDirectory}};
  CHECK(Check(Options("app"), machine).ok());
  CHECK(Check(Options("src"), machine).message() ==
        "script 'src': a directory without __main__.py (relative to /work)");
  auto run_path = Options("src");
  run_path.run_path = true;
  CHECK_FALSE(Check(run_path, machine).ok());
}

TEST_CASE(
    "a module given with -m is looked up by its top-level package with the chosen interpreter",
    "[command]") {
  FakeMachine machine;
  machine.modules = {{"torch", ModuleLookup::kFound}};
  auto o = Options("torch.distributed.run");
  o.run_as_module = true;
  CHECK(Check(o, machine).ok());
  CHECK(machine.lookups == std::vector<std::string>{"/usr/bin/python3 torch"});

  o.script = "trian.main";
  const Status missing = Check(o, machine);
  CHECK(missing.message() ==
        "-m: 'trian.main': python3 (/usr/bin/python3) finds no module named 'trian'; choose the "
        "interpreter with --python or MUSTER_PYTHON");
}

TEST_CASE("an interpreter that gives no answer does not stop the job", "[command]") {
  FakeMachine machine;
  machine.modules = {{"mod", ModuleLookup::kUnknown}};
  auto o = Options("mod");
  o.run_as_module = true;
  CHECK(Check(o, machine).ok());
}

TEST_CASE("programs run with --no-python are left to the launch plan's PATH search", "[command]") {
  FakeMachine machine;
  auto o = Options("muster-train");
  o.no_python = true;
  CHECK(Check(o, machine).ok());
}
