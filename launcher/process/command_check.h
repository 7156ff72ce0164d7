// CheckWorkerCommand: whether the workers' command can run at all, decided
// before anything starts, so that a typo costs one line (exit 2) and not a
// failed job: a SCRIPT that does not exist or is a directory Python cannot
// run, or an `-m` MODULE whose top-level package the interpreter does not
// find. (An interpreter or --no-python program that is not found fails
// earlier, in MakeLaunchPlan.)
//
// As torchrun, SCRIPT is a path relative to the working directory, and a
// module is looked up as `python -m` would from there.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "launcher/plan/launch_options.h"
#include "launcher/plan/launch_plan.h"

namespace muster {

enum class PathKind { kMissing, kFile, kDirectory, kOther };

enum class ModuleLookup {
  kFound,
  kNotFound,
  // The interpreter gave no answer: it failed, was killed, is not a real
  // Python (a wrapper), or took too long. The workers will tell.
  kUnknown,
};

// The machine's answers; injected so that tests need no files or Python.
struct CommandProbe {
  std::function<PathKind(const std::string& path)> path_kind;
  // Whether `interpreter` (an absolute path) finds the top-level module
  // `name` on its sys.path, run from the working directory.
  std::function<ModuleLookup(const std::string& interpreter, const std::string& name)> find_module;
};

// OK when the command may run. Otherwise InvalidArgument naming the value:
//   "script 'nosuch.py': no such file (relative to /work)"
//   "script 'src': a directory without __main__.py"
//   "-m: 'trian': python3 (/usr/bin/python3) finds no module named 'trian'; ..."
// Only the top-level package of a dotted MODULE is looked up: finding a
// submodule means importing its packages, which can take seconds (torch);
// a missing submodule is left to the workers to report.
// --no-python commands are not checked here (MakeLaunchPlan found them).
Status CheckWorkerCommand(const LaunchOptions& options, const LaunchPlan& plan,
                          const std::string& working_dir, const CommandProbe& probe);

// The probe of this machine: stat(2), and the interpreter itself asked
// through importlib.util.find_spec (one interpreter start, bounded by a
// 10 s deadline; measured at 40-80 ms for /usr/bin/python3 on a loaded
// 2-core machine, about 0.25 s through a pyenv shim).
CommandProbe ThisMachineProbe();

}  // namespace muster
