// Text that other users or programs wrote (process and device names on stats pages,
// pool names, tags): checked UTF-8, and a form safe to print to a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace npumem::util {

// The length of the well-formed UTF-8 sequence at `at` (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF), or 0 when it is ill-formed.
std::size_t utf8_length(std::string_view text, std::size_t at);

// `text` with every byte a terminal could act on written as \xNN: C0 and C1 control
// characters (ESC starts escape sequences), DEL, a backslash (so that the escaping
// stays unambiguous) and bytes of ill-formed UTF-8. Printable characters are kept.
std::string escaped_for_display(std::string_view text);

}  // namespace npumem::util
