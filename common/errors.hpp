// Two error tiers (style rule 10):
//  - InputError: the user gave something wrong. The message names what was given and what was
//    expected; the command line prints it on one line and exits with status 2.
//  - TOPOCOLL_ASSERT: a broken internal invariant, with operands and file:line. A bug, not input.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace topocoll {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

[[noreturn]] inline void assertion_failed(const char* expr, const std::string& detail, const char* file, int line) {
  std::ostringstream os;
  os << "internal error: assertion `" << expr << "` failed";
  if (!detail.empty()) os << " (" << detail << ")";
  os << " at " << file << ":" << line;
  throw InternalError(os.str());
}

}  // namespace topocoll

#define TOPOCOLL_ASSERT(expr, detail)                                               \
  do {                                                                              \
    if (!(expr)) ::topocoll::assertion_failed(#expr, (detail), __FILE__, __LINE__); \
  } while (0)
