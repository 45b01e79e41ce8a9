// Shared by the runner's tests: a fresh temporary folder, and a file written into it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace topocoll::experiments::testing {

class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("topocoll-exp-test-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `text` to NAME inside the folder; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace topocoll::experiments::testing
