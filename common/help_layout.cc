#include "common/help_layout.h"

#include "common/flag_match.h"

namespace muster {

void AppendWrapped(std::string& out, std::string_view text) {
  constexpr std::size_t kIndent = 6, kWidth = 80;
  std::size_t column = kWidth;  // forces a new line before the first word
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (column + 1 + word.size() > kWidth) {
      out += '\n';
      out.append(kIndent, ' ');
      column = kIndent;
    } else {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
}

void AppendOptionHelp(std::string& out, std::string_view names, std::string_view help,
                      std::string_view default_text) {
  out += "  ";
  out += names;
  std::string text(help);
  if (!default_text.empty()) {
    text += " Default: ";
    text += default_text;
    text += '.';
  }
  AppendWrapped(out, text);
  out += '\n';
}

std::string BothSpellings(std::string_view dashed_name) {
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict in
  // libstdc++ for "literal" + std::string(...).
  std::string out = "--";
  out += dashed_name;
  if (dashed_name.find('-') == std::string_view::npos) return out;
  out += ", --";
  out += UnderscoredName(dashed_name);
  return out;
}

}  // namespace muster
