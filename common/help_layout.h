// HelpLayout: the layout of the --help texts of muster, `muster status` and
// musterd, so that they read alike:
//
//   Rendezvous:
//     --rdzv-endpoint, --rdzv_endpoint HOST[:PORT][,...]
//         Where the rendezvous runs ... Default: 29400.
//
// A heading line ends in ':'; an option line starts with two spaces and its
// names; its help follows, wrapped at 80 columns and indented by 6.
// (tests/packaging/docs_cover_flags_test.py reads flags from this layout.)
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace muster {

// Appends one option: "  " + `names` (e.g. "-r, --redirects STD"), a newline,
// then `help` word-wrapped, followed by " Default: <default_text>." unless
// `default_text` is empty, and a final newline.
void AppendOptionHelp(std::string& out, std::string_view names, std::string_view help,
                      std::string_view default_text = {});

// Appends `text` as lines of at most 80 columns, each indented by 6 spaces,
// starting with a line break; no newline at the end.
void AppendWrapped(std::string& out, std::string_view text);

// The spellings of a long option for the names column: "--token-file,
// --token_file" for "token-file", "--json" when there is no dash to swap.
std::string BothSpellings(std::string_view dashed_name);

}  // namespace muster
