#include "launcher/plan/python_package.h"

#include <filesystem>
#include <sstream>
#include <system_error>

namespace muster {
namespace {

bool Under(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.size() <= dir.size()) return false;
  return path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

std::string Parent(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::optional<std::string> PythonPackageDir(
    const std::string& executable, const PackageLayout& layout,
    const std::function<bool(const std::string&)>& has_package) {
  if (Under(executable, layout.build_dir)) {
    if (has_package(layout.source_python_dir)) return layout.source_python_dir;
    return std::nullopt;
  }
  const std::string bin = Parent(executable);
  if (bin.size() < 4 || bin.compare(bin.size() - 4, 4, "/bin") != 0) return std::nullopt;
  const std::string prefix = Parent(bin);
  if (prefix == "/usr" || layout.install_python_dir.empty()) return std::nullopt;
  const std::string dir = (prefix == "/" ? "" : prefix) + "/" + layout.install_python_dir;
  if (has_package(dir)) return dir;
  return std::nullopt;
}

std::string PythonPathWith(const std::optional<std::string>& inherited, const std::string& dir) {
  if (!inherited || inherited->empty()) return dir;
  std::istringstream entries(*inherited);
  for (std::string entry; std::getline(entries, entry, ':');) {
    if (entry == dir) return *inherited;
  }
  return *inherited + ":" + dir;
}

PackageLayout ThisBuildLayout() {
  // Configured paths (packaging/CMakeLists.txt sets them on this file only,
  // so that no other object depends on where the tree was built).
  return {MUSTER_BUILD_DIR, MUSTER_SOURCE_PYTHON_DIR, MUSTER_INSTALL_PYTHON_DIR};
}

std::optional<std::string> ThisPythonPackageDir() {
  std::error_code error;
  const auto executable = std::filesystem::canonical("/proc/self/exe", error);
  if (error) return std::nullopt;
  return PythonPackageDir(executable.string(), ThisBuildLayout(), [](const std::string& dir) {
    std::error_code missing;
    return std::filesystem::is_regular_file(dir + "/muster/__init__.py", missing);
  });
}

}  // namespace muster
