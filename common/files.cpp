#include "common/files.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"

namespace topocoll {

std::string read_input_file(const std::string& path, std::string_view expected) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw InputError(fmt::format("{}: no such file: expected {}", path, expected));
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{}: is a directory: expected {}", path, expected));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) throw InputError(fmt::format("{}: cannot be read: expected {}", path, expected));
  return text.str();
}

}  // namespace topocoll
