// Prints a capture Summary for people (text) or for scripts (--json, one object).
#pragma once

#include <cstdio>
#include <string>

#include "checker.h"

namespace vroce::pcapcheck {

void print_text(std::FILE* out, const std::string& path, const Summary& s);
void print_json(std::FILE* out, const std::string& path, const Summary& s);

}  // namespace vroce::pcapcheck
