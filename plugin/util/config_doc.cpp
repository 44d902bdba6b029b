// Renders the settings registry as the Markdown tables of docs/configuration.md, so the document
// is generated from the same table the parser uses and a unit test catches any drift.
#include <string>

#include "util/config.h"
#include "util/config_registry.h"

namespace roce {
namespace {

// Table cells must not contain the column separator or line breaks.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out.empty() ? std::string("-") : out;
}

std::string code_cell(std::string_view text) {
  return text.empty() ? std::string("-") : "`" + std::string(text) + "`";
}

std::string counterpart_cell(const SettingInfo& info) {
  if (info.counterpart.empty()) {
    return "-";
  }
  if (info.counterpart == info.name) {
    return "NCCL's own";
  }
  return code_cell(info.counterpart);
}

}  // namespace

std::string settings_markdown() {
  std::string out;
  out += "| Setting | Type | Default | Range | NCCL counterpart | Precedence | Meaning |\n";
  out += "|---|---|---|---|---|---|---|\n";
  for (const config_detail::Setting& setting : config_detail::registry()) {
    const SettingInfo& info = setting.info;
    if (!info.applied) {
      continue;
    }
    out += "| " + code_cell(info.name) + " | " + cell(info.type_text) + " | " +
           cell(info.default_text) + " | " + cell(info.range_text) + " | " +
           counterpart_cell(info) + " | " + cell(info.precedence) + " | " + cell(info.description) +
           " |\n";
  }
  out += "\n";
  out +=
      "NCCL settings that are recognised but not applied (each one found in the environment is "
      "reported at INFO with what the plugin does instead):\n\n";
  out += "| Setting | What the plugin does instead |\n";
  out += "|---|---|\n";
  for (const config_detail::Setting& setting : config_detail::registry()) {
    const SettingInfo& info = setting.info;
    if (info.applied) {
      continue;
    }
    out += "| " + code_cell(info.name) + " | " + cell(info.description) + " |\n";
  }
  return out;
}

}  // namespace roce
