// Where the muster Python package (python/muster) is for the muster binary
// that runs, so that workers `import muster` without the user setting
// PYTHONPATH: a binary in its build tree uses its source tree's python/, an
// installed one (cmake --install, the .deb) the package directory installed
// beside it. The user's own PYTHONPATH always comes first.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace muster {

// Facts about one build of muster, fixed when it was configured.
struct PackageLayout {
  std::string build_dir;           // CMAKE_BINARY_DIR: a binary under it runs from its build
  std::string source_python_dir;   // <source>/python
  std::string install_python_dir;  // the package's directory relative to the install prefix
};

// The directory to put on the workers' PYTHONPATH for the binary at
// `executable` (a resolved path), or nullopt when none is needed or none
// holds the package (`has_package(dir)`: dir/muster/__init__.py exists):
//   - under `layout.build_dir`: `layout.source_python_dir`;
//   - elsewhere, installed as <prefix>/bin/muster: <prefix>/<install dir>,
//     except for the prefix /usr (Debian's python3 already searches
//     /usr/lib/python3/dist-packages, and putting it on PYTHONPATH would put
//     system packages before a virtual environment's).
std::optional<std::string> PythonPackageDir(
    const std::string& executable, const PackageLayout& layout,
    const std::function<bool(const std::string&)>& has_package);

// The PYTHONPATH for workers: `inherited` (the user's, first) with `dir`
// appended unless already one of its entries.
std::string PythonPathWith(const std::optional<std::string>& inherited, const std::string& dir);

// This build's layout (configured paths) and the package directory for the
// running binary (/proc/self/exe), checked on disk.
PackageLayout ThisBuildLayout();
std::optional<std::string> ThisPythonPackageDir();

}  // namespace muster
