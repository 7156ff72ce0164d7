// The --help and --version texts, generated from the flag table.
#pragma once

#include <string>

#include "launcher/cli/command_mode.h"

namespace muster::cli {

// Usage line (of `muster` or of `muster launch`), precedence rules, and every
// command-line flag grouped under headings, with both spellings, value syntax
// and default. No trailing newline.
std::string HelpText(CommandMode mode = CommandMode::kRun);

// "muster 0.1.0" (the project version). No trailing newline.
std::string VersionText();

}  // namespace muster::cli
