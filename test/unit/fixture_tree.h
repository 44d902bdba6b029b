// A throw-away directory tree for tests that read sysfs-like files: created under $TMPDIR (or
// /tmp) with mkdtemp, removed with everything in it when the object goes, also on failure.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace roce::test {

class FixtureTree {
 public:
  FixtureTree() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/roce-fixture-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    root_ = pattern;
  }
  ~FixtureTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FixtureTree(const FixtureTree&) = delete;
  FixtureTree& operator=(const FixtureTree&) = delete;

  const std::string& root() const { return root_; }
  std::string path(const std::string& relative) const { return root_ + "/" + relative; }

  void write(const std::string& relative, const std::string& content) const {
    const std::filesystem::path file = path(relative);
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << content;
  }
  void mkdir(const std::string& relative) const {
    std::filesystem::create_directories(path(relative));
  }
  // A symlink at `relative` pointing to `target` (taken as given: relative or absolute).
  void link(const std::string& relative, const std::string& target) const {
    const std::filesystem::path file = path(relative);
    std::filesystem::create_directories(file.parent_path());
    std::filesystem::create_symlink(target, file);
  }

 private:
  std::string root_;
};

}  // namespace roce::test
