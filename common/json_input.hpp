// Reading JSON input files safely (schedules, calibrations, records): every failure of the JSON
// library (syntax, a number too large for a double, a wrong type) becomes an InputError naming
// the file, the field and the value; integers are range-checked before they are narrowed, never
// truncated; text taken from the input is quoted so that it prints on one line.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/errors.hpp"

namespace topocoll::json_input {

// At most this many characters of an input value are echoed in an error.
inline constexpr std::size_t kEchoChars = 80;

// `text` as JSON; InputError "SOURCE:LINE: not valid JSON (...)" otherwise, including numbers
// that do not fit a double (1e309), which the library reports as out_of_range.
inline nlohmann::json parse(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const std::size_t upto = std::min<std::size_t>(e.byte, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(upto), '\n');
    throw InputError(fmt::format("{}:{}: not valid JSON ({})", source, line, e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON ({})", source, e.what()));
  }
}

// A value as it was written, on one line and at most kEchoChars long: for error messages.
inline std::string echo(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (s.size() > kEchoChars) s = s.substr(0, kEchoChars) + "...";
  return s;
}
// A key or string of the input, quoted and escaped (a raw newline prints as \n).
inline std::string quote(const std::string& s) {
  return echo(nlohmann::json(s));
}
// The same without the quotes: for text printed inside '...' (any input, JSON or YAML).
inline std::string escaped(const std::string& s) {
  const std::string q = quote(s);
  return q.size() >= 2 && q.back() == '"' ? q.substr(1, q.size() - 2) : q.substr(1);
}

// An integer field in [lo, hi]; InputError "WHERE: WHAT VALUE: expected an integer from LO to
// HI" for anything else (a float, a string, a value out of range: never truncated). `limit`,
// when given, names the constant that sets HI.
template <typename T>
T integer(const nlohmann::json& v, const std::string& where, const std::string& what,
          T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max(), const char* limit = nullptr) {
  bool in_range = false;
  if (v.is_number_unsigned()) {
    const std::uint64_t x = v.get<std::uint64_t>();
    in_range = std::cmp_greater_equal(x, lo) && std::cmp_less_equal(x, hi);
  } else if (v.is_number_integer()) {
    const std::int64_t x = v.get<std::int64_t>();
    in_range = std::cmp_greater_equal(x, lo) && std::cmp_less_equal(x, hi);
  }
  if (!in_range)
    throw InputError(fmt::format("{}: {} {}: expected an integer from {} to {}{}", where, what, echo(v), lo, hi,
                                 limit ? fmt::format(" (the limit {})", limit) : std::string()));
  return v.is_number_unsigned() ? static_cast<T>(v.get<std::uint64_t>()) : static_cast<T>(v.get<std::int64_t>());
}

// A string field; InputError naming it otherwise.
inline std::string string(const nlohmann::json& v, const std::string& where, const std::string& what) {
  if (!v.is_string()) throw InputError(fmt::format("{}: {} {}: expected a string", where, what, echo(v)));
  return v.get<std::string>();
}

}  // namespace topocoll::json_input
