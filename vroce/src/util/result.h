// vroce's setup error type: the project's one Result (include/roce/result.h), named in vroce's
// namespace so vroce code says Result, Status and failure as the plugin does.
#pragma once

#include "roce/result.h"

namespace vroce {

using roce::error_text;
using roce::failure;
using roce::Result;
using roce::Status;

}  // namespace vroce
