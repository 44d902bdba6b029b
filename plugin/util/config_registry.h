// The registry table behind util/config.h: one row per setting (name, kind, bounds, default,
// documentation). Internal to util/: config.cpp parses with it, config_doc.cpp renders it.
#pragma once

#include <span>

#include "util/config.h"

namespace roce::config_detail {

enum class Kind {
  Integer,     // decimal or 0x hex, within [min, max]
  Boolean,     // 0/1, true/false, yes/no, on/off
  Text,        // free text; checks, if any, happen when the Config is assembled
  Recognised,  // an NCCL setting we do not apply: reported at INFO with what we do instead
};

struct Setting {
  SettingInfo info;
  Kind kind = Kind::Text;
  long long min = 0;
  long long max = 0;
  bool minus_one_is_unset = false;  // NCCL's convention for "not set" on several NCCL_IB_* ints
};

std::span<const Setting> registry();

}  // namespace roce::config_detail
