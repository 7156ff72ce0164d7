// Printable: how an untrusted string (a node id, a host name, a run id, a
// message a peer sent) is shown on a terminal or in a log line.
#pragma once

#include <string>
#include <string_view>

namespace muster {

// Returns `text` with every byte or character a terminal or a log reader
// would act on escaped, and everything else (printable ASCII, valid UTF-8
// such as "nœud-é") kept as is:
//   - C0 controls: "\n", "\r", "\t", else "\x1b" and the like;
//   - DEL: "\x7f";
//   - C1 controls (U+0080..U+009F, which some terminals read as ESC, CSI,
//     OSC...), written in UTF-8: "\u009b";
//   - bytes that are not valid UTF-8 (a lone 0x9b is CSI to an 8-bit
//     terminal): "\x9b".
// So a value can neither end a log line nor move the cursor, retitle the
// window or hide text. Backslashes are kept: the result is for reading,
// not for decoding. Never throws except std::bad_alloc.
std::string EscapeControlCharacters(std::string_view text);

}  // namespace muster
