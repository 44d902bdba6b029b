// The markers around the generated part of docs/configuration.md, shared by the doc test and
// the roce_config_doc generator.
#pragma once

namespace roce::test {

inline constexpr const char* kDocBeginMarker =
    "<!-- BEGIN GENERATED: settings tables (build/ci/test/unit/roce_config_doc) -->";
inline constexpr const char* kDocEndMarker = "<!-- END GENERATED -->";

}  // namespace roce::test
