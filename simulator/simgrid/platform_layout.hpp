// The layout both SimGrid platforms share, the one the engine builds in memory
// (simgrid_adapter.cpp) and the one written as XML (platform_xml.cpp): link names and
// directions, a Router route as a walk of steps, and its split at the node boundaries. No SimGrid
// here: the names and the walk are the model's.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "simulator/routes.hpp"
#include "topologies/topology.hpp"

namespace topocoll::sim::sg {

// Every model edge's SimGrid name and the end its "UP" direction starts from: the source of the
// edge as the graph lists it (boost::edges), whatever the orientation of a descriptor at hand.
// Names as in topologies/export.hpp: "<a>--<b>", "#k" for the k-th parallel edge.
class LinkCatalog {
 public:
  explicit LinkCatalog(const topo::Topology& t);
  const std::string& name(topo::Edge e) const { return entry(e).name; }
  // Whether walking e from vertex `from` runs in its UP direction.
  bool up(topo::Edge e, topo::Vertex from) const { return entry(e).up_from == from; }

 private:
  struct Entry {
    std::string name;
    topo::Vertex up_from;
  };
  const topo::Graph& g_;
  std::unordered_map<const topo::Link*, Entry> entries_;
  const Entry& entry(topo::Edge e) const;
};

// One link of a route, walked from vertex `from` to vertex `to`: UP or DOWN.
struct Step {
  topo::Edge edge;
  topo::Vertex from = 0, to = 0;
  bool up = true;
};

// A Router route walked from rank src's GPU.
std::vector<Step> steps_of(const topo::Topology& t, const LinkCatalog& catalog, int src, const Route& r);

// Splits a cross-node route at its first vertex outside the source's node and its last vertex
// outside the destination's node: [inside a's node][fabric][inside b's node].
struct CrossNodeParts {
  std::vector<Step> out, fabric, in;
};
CrossNodeParts split_cross_node(const topo::Graph& g, const std::vector<Step>& steps, int node_a, int node_b);

inline std::string split_duplex_name(const std::string& link, bool up) {
  return link + (up ? "_UP" : "_DOWN");
}

// Whether two walks cross the same links the same way.
bool same_links(const std::vector<Step>& a, const std::vector<Step>& b);

}  // namespace topocoll::sim::sg
