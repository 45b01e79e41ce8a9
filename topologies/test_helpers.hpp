// Helpers shared by the topologies/ doctest suites.
#pragma once

#include <string>

#include "topologies/topology.hpp"

namespace topocoll::topo::testing {

inline std::string source_path(const std::string& relative) {
  return std::string(TOPOCOLL_SOURCE_DIR) + "/" + relative;
}

// Number of links of `kind` touching vertex v.
inline int links_of(const Graph& g, Vertex v, LinkKind kind) {
  int n = 0;
  for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
    if (g[e].kind == kind) ++n;
  return n;
}

inline double bw_of(const Graph& g, Vertex v, LinkKind kind) {
  double bw = 0.0;
  for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
    if (g[e].kind == kind) bw += g[e].bw_gbps;
  return bw;
}

}  // namespace topocoll::topo::testing
