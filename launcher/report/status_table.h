// What `muster status` prints from the daemon's status document: a table
// per run (FormatStatusTable), or with --json the document itself
// (StatusJsonForTerminal). The document comes from the network: every
// string in it is shown through EscapeControlCharacters (common/printable.h),
// so a joiner's node id, host or message cannot move the operator's cursor,
// retitle the terminal or hide a line, and a field of the wrong type is
// reported, not thrown.
//
// Thread-safety: pure functions. Never throw except std::bad_alloc.
#pragma once

#include <string>

namespace muster {

// The table form of a status document: per run its state, generation,
// restarts, progress line and one row per node. A document that is not
// JSON, or has no "runs", is "unreadable status document\n"; one whose
// fields have the wrong type is one line naming the first such field:
//   "malformed status document: runs[0].nodes[2].host is a number, not a string\n"
std::string FormatStatusTable(const std::string& status_json);

// The document for --json, on one line and in printable ASCII: every
// character outside it written as a JSON escape (\u001b, \u009b, \u00e9),
// the same document to a JSON reader. Not JSON at all:
// "unreadable status document".
std::string StatusJsonForTerminal(const std::string& status_json);

}  // namespace muster
