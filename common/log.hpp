// Logging by level and subsystem, chosen at run time (style rule 13):
//   TOPOCOLL_LOG=error|warn|info|debug   (default warn)
//   TOPOCOLL_LOG_SUBSYS=topo,sim,...      (default: all)
// Messages go to stderr as "topocoll <LEVEL> [subsys] message".
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace topocoll::log {

enum class Level { Error = 0, Warn = 1, Info = 2, Debug = 3 };

bool enabled(Level level, std::string_view subsys);
void write(Level level, std::string_view subsys, std::string_view message);

template <typename... Args>
void emit(Level level, std::string_view subsys, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(level, subsys)) write(level, subsys, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace topocoll::log

#define TC_LOG_ERROR(subsys, ...) ::topocoll::log::emit(::topocoll::log::Level::Error, subsys, __VA_ARGS__)
#define TC_LOG_WARN(subsys, ...) ::topocoll::log::emit(::topocoll::log::Level::Warn, subsys, __VA_ARGS__)
#define TC_LOG_INFO(subsys, ...) ::topocoll::log::emit(::topocoll::log::Level::Info, subsys, __VA_ARGS__)
#define TC_LOG_DEBUG(subsys, ...) ::topocoll::log::emit(::topocoll::log::Level::Debug, subsys, __VA_ARGS__)
