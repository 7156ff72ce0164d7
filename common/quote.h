// Quote: how every error message shows a user-supplied value.
#pragma once

#include <string>
#include <string_view>

namespace muster {

// Returns `value` in single quotes with control and non-ASCII bytes escaped
// (\n, \t, \xNN), so an error message stays one printable line whatever the
// user typed. Values longer than 200 bytes are cut and end in "...".
std::string Quote(std::string_view value);

}  // namespace muster
