// Shared plumbing of the libFuzzer harnesses (fuzz/README.md). Each harness feeds one input to
// the public entry point the command line uses; an InputError (and, for schedules, the
// verifier's "the schedule is wrong") is a normal outcome. Any other exception is a finding:
// the harness prints it and aborts, so libFuzzer saves the input as a reproducer.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "common/errors.hpp"

namespace topocoll::fuzz {

// Runs `f`; InputError is a normal outcome, anything else aborts with the exception's text.
template <typename F>
int guarded(F&& f) {
  try {
    f();
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FINDING: unexpected exception: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "FINDING: an exception not derived from std::exception\n");
    std::abort();
  }
  return 0;
}

// A folder of this process's own under the temporary directory, made once.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("topocoll-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Copies the files matching `suffix` of the repository folder `from` (relative to the source
// tree) into scratch_dir()/`to`, so that inputs naming them relative to their own folder (a
// cluster spec's `node: x.xml`, a spec's topologies and calibration) find them.
inline void provide(const std::string& from, const std::string& to, const std::string& suffix) {
  namespace fs = std::filesystem;
  const fs::path src = fs::path(TOPOCOLL_SOURCE_DIR) / from;
  const fs::path dst = scratch_dir() / to;
  fs::create_directories(dst);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(src, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      fs::copy_file(e.path(), dst / name, fs::copy_options::overwrite_existing, ec);
  }
}

// Writes the input to `name` in scratch_dir() and returns its path (for entry points that read files).
inline std::string write_input(const std::uint8_t* data, std::size_t size, const std::string& name) {
  const std::filesystem::path p = scratch_dir() / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p.string();
}

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace topocoll::fuzz
