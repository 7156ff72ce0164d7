// The --help and --version texts, generated from the flag table.
#pragma once

#include <string>

namespace muster::cli {

// Usage line, precedence rules, and every command-line flag grouped under
// headings, with both spellings, value syntax and default. No trailing newline.
std::string HelpText();

// "muster 0.1.0" (the project version). No trailing newline.
std::string VersionText();

}  // namespace muster::cli
