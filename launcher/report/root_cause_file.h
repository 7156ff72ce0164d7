// The root-cause error file: when muster was started with
// TORCHELASTIC_ERROR_FILE set (a scheduler asking why a job failed) and the
// job fails, muster writes there what torchrun's @record on its main writes:
// the first failed worker's own error file (torch's @record format), with
// message.errorCode set to that worker's exit code.
//
// As torchrun, nothing is written when that worker left no error file (its
// script was not decorated with @record), nor when the launcher itself failed
// or was signalled. Workers keep their own TORCHELASTIC_ERROR_FILE paths
// (worker_env.h), so no worker can write over this file.
#pragma once

#include <string>
#include <string_view>

#include "common/env_lookup.h"
#include "common/status.h"
#include "launcher/process/exit_status.h"
#include "launcher/process/worker_group.h"

namespace muster {

// The code torch reports for a worker's end: its exit code, or -signal when a
// signal killed it (as Python's subprocess returncode).
int TorchExitCode(const ExitStatus& status);

// What torch's ErrorHandler.dump_error_file writes for a worker error file
// whose text is `worker_file_text`: the same JSON with message.errorCode set
// to `error_code` when that is non-zero and "message" is an object (a string
// "message", or none, is copied unchanged, as torch does), serialized as
// Python's json.dumps does it (", " and ": " separators, non-ASCII escaped,
// keys in the file's order, no trailing newline). Fails (InvalidArgument)
// when the text is not JSON. Pure.
Result<std::string> RootCauseErrorJson(std::string_view worker_file_text, int error_code);

// Writes RootCauseErrorJson of `root_cause`'s error file to `destination`,
// replacing a file already there. NotFound when the worker wrote no error
// file (then nothing is written); InvalidArgument when it is not JSON;
// IoError when `destination` cannot be written. The worker's file is only read.
Status WriteRootCauseErrorFile(const std::string& destination, const WorkerFailure& root_cause);

// The agent's call when the job failed with `root_cause` as this node's first
// failure: WriteRootCauseErrorFile to the launcher's TORCHELASTIC_ERROR_FILE
// (read from `launcher_env`; unset or empty: nothing to do), logging one line
// with the outcome.
void CopyRootCauseErrorFile(const EnvLookup& launcher_env, const WorkerFailure& root_cause);

}  // namespace muster
