#include "launcher/output/output_routes.h"

#include <algorithm>

namespace muster {

Result<FilteredCopies> OpenFilteredCopies(const LaunchOptions& options,
                                          const std::string& attempt_dir) {
  FilteredCopies copies;
  if (!options.duplicate_stdout_filters.empty()) {
    auto out =
        FilteredCopy::Open(attempt_dir + "/filtered_stdout.log", options.duplicate_stdout_filters);
    if (!out.ok()) return out.status();
    copies.out = std::move(out).value();
  }
  if (!options.duplicate_stderr_filters.empty()) {
    auto err =
        FilteredCopy::Open(attempt_dir + "/filtered_stderr.log", options.duplicate_stderr_filters);
    if (!err.ok()) return err.status();
    copies.err = std::move(err).value();
  }
  return copies;
}

WorkerRoutes RoutesFor(const LaunchOptions& options, int local_rank, const std::string& rank_dir,
                       const FilteredCopies& filtered) {
  const int redirect = options.redirects.For(local_rank);
  const int tee = options.tee.For(local_rank);
  const bool shown = ShownOnConsole(options, local_rank);
  // --log-dir keeps every stream in a file, redirected or not.
  const bool keep_files = !options.log_dir.empty();
  auto route = [&](int stream, const char* file, const std::shared_ptr<FilteredCopy>& copy) {
    StreamRoute r;
    r.to_console = shown && !(redirect & stream);
    if (keep_files || ((redirect | tee) & stream)) r.file_path = rank_dir + "/" + file;
    if (TeedToConsole(options, local_rank, stream)) r.filtered_copy = copy;
    return r;
  };
  return {route(kStdOut, "stdout.log", filtered.out), route(kStdErr, "stderr.log", filtered.err)};
}

}  // namespace muster
