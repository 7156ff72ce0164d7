#include "launcher/process/command_check.h"

namespace muster {

Status CheckWorkerCommand(const LaunchOptions& options, const LaunchPlan& plan,
                          const std::string& working_dir, const CommandProbe& probe) {
  if (options.no_python) return Status::Ok();
  const std::string& script = options.script;
  if (options.run_as_module) {
    const std::string top_level = script.substr(0, script.find('.'));
    // A relative import ("-m .x") or an empty name: Python's own error is clearer.
    if (top_level.empty()) return Status::Ok();
    if (probe.find_module(plan.executable, top_level) != ModuleLookup::kNotFound) {
      return Status::Ok();
    }
    const std::string interpreter = InterpreterText(options, plan);
    return Status::InvalidArgument("-m: '" + script + "': " + interpreter +
                                   " finds no module named '" + top_level +
                                   "'; choose the interpreter with --python or MUSTER_PYTHON");
  }
  const std::string where = script.starts_with('/') ? "" : " (relative to " + working_dir + ")";
  switch (probe.path_kind(script)) {
    case PathKind::kMissing:
      return Status::InvalidArgument("script '" + script + "': no such file" + where);
    case PathKind::kDirectory:
      // Python runs a directory's __main__.py (so does runpy.run_path).
      if (probe.path_kind(script + "/__main__.py") == PathKind::kFile) return Status::Ok();
      return Status::InvalidArgument("script '" + script + "': a directory without __main__.py" +
                                     where);
    case PathKind::kFile:
    case PathKind::kOther:  // a FIFO or /dev/stdin: Python reads it
      return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace muster
