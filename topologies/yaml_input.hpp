// Reading YAML input with errors that name the file, the line, what was given and what was
// expected (the cluster spec, topologies/load.cpp; the node language, topologies/node_spec.cpp).
// For the library's .cpp files only: it includes yaml-cpp, which the library links privately.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/errors.hpp"
#include "common/json_input.hpp"
#include "topologies/node_spec.hpp"

namespace topocoll::topo::yaml_input {

inline int line_of(const YAML::Node& n) {
  return n.Mark().line + 1;
}

// Reads a YAML scalar as T; a wrong type names the file, line and expectation.
template <typename T>
T scalar(const YAML::Node& n, const std::string& source, const std::string& key, const char* expected) {
  try {
    if (!n.IsScalar()) throw YAML::BadConversion(n.Mark());
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(fmt::format("{}:{}: '{}' must be {}", source, line_of(n), key, expected));
  }
}

inline void reject_unknown_keys(const YAML::Node& map, const std::string& source,
                                std::initializer_list<std::string_view> known, const std::string& where) {
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      throw InputError(fmt::format("{}:{}: a key of {} is not a name", source, line_of(kv.first), where));
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw InputError(fmt::format("{}:{}: unknown key '{}' in {}: expected one of {}", source, line_of(kv.first),
                                 json_input::escaped(key), where, list));
  }
}

inline double positive(double v, const YAML::Node& n, const std::string& source, const std::string& key, double max,
                       const char* limit) {
  if (!(v > 0.0))
    throw InputError(fmt::format("{}:{}: '{}' must be a positive number, got {}", source, line_of(n), key, v));
  if (!(v <= max))
    throw InputError(
        fmt::format("{}:{}: '{}' {} is more than {:g} (the limit {})", source, line_of(n), key, v, max, limit));
  return v;
}

// An integer in lo..hi.
inline int integer(const YAML::Node& n, const std::string& source, const std::string& key, int lo, int hi) {
  const std::string expected = fmt::format("an integer from {} to {}", lo, hi);
  const int v = scalar<int>(n, source, key, expected.c_str());
  if (v < lo || v > hi)
    throw InputError(
        fmt::format("{}:{}: '{}' must be an integer from {} to {}, got {}", source, line_of(n), key, lo, hi, v));
  return v;
}

// A port rate written as vendors write it, "400 Gb/s" (also "400Gb/s", "400 Gbps"), in Gb/s.
// topologies/node_spec.cpp.
double gbit(const YAML::Node& n, const std::string& source, const std::string& key);

// A node description given as a YAML map (a node file's root, or `node:` inline in a cluster
// spec). topologies/node_spec.cpp.
NodeSpec parse_node_map(const YAML::Node& root, const std::string& source);

}  // namespace topocoll::topo::yaml_input
