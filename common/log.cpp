#include "common/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace topocoll::log {
namespace {

struct Config {
  Level level = Level::Warn;
  std::string subsystems;  // comma list; empty = all

  static Config from_environment() {
    Config c;
    if (const char* v = std::getenv("TOPOCOLL_LOG")) {
      std::string s(v);
      if (s == "error")
        c.level = Level::Error;
      else if (s == "warn")
        c.level = Level::Warn;
      else if (s == "info")
        c.level = Level::Info;
      else if (s == "debug")
        c.level = Level::Debug;
      else
        std::fprintf(stderr, "topocoll WARN [log] TOPOCOLL_LOG=%s is not one of error|warn|info|debug; using warn\n",
                     v);
    }
    if (const char* v = std::getenv("TOPOCOLL_LOG_SUBSYS")) c.subsystems = v;
    return c;
  }
};

const Config& config() {
  static const Config c = Config::from_environment();
  return c;
}

bool subsystem_selected(std::string_view list, std::string_view subsys) {
  if (list.empty()) return true;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(start, end - start) == subsys) return true;
    start = end + 1;
  }
  return false;
}

constexpr const char* kLevelNames[] = {"ERROR", "WARN", "INFO", "DEBUG"};

}  // namespace

bool enabled(Level level, std::string_view subsys) {
  const Config& c = config();
  return static_cast<int>(level) <= static_cast<int>(c.level) && subsystem_selected(c.subsystems, subsys);
}

void write(Level level, std::string_view subsys, std::string_view message) {
  std::fprintf(stderr, "topocoll %s [%.*s] %.*s\n", kLevelNames[static_cast<int>(level)],
               static_cast<int>(subsys.size()), subsys.data(), static_cast<int>(message.size()), message.data());
}

}  // namespace topocoll::log
