// The SimGrid engine's platform as XML (platform_xml.hpp). It follows build_platform() in
// simgrid_adapter.cpp step for step, over the shared layout (platform_layout.hpp); the tests
// (platform_xml_test.cpp) load the file into SimGrid and compare every route, link and time
// with the platform the adapter builds.
#include "simulator/simgrid/platform_xml.hpp"

#include <fmt/format.h>

#include <map>
#include <ostream>
#include <string_view>
#include <unordered_set>

#include "common/errors.hpp"
#include "simulator/calibration.hpp"
#include "simulator/routes.hpp"
#include "simulator/simgrid/platform_layout.hpp"

namespace topocoll::sim::sg {

using topo::Edge;
using topo::Vertex;

namespace {

std::string xml_escaped(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += ch;
    }
  }
  return escaped;
}

// Shortest text that reads back as the same double, so SimGrid gets the adapter's very values.
std::string number(double v) {
  return fmt::format("{}", v);
}

class Writer {
 public:
  Writer(const PlatformSpec& spec, std::ostream& out)
      : spec_(spec),
        t_(*spec.topology),
        g_(t_.graph()),
        c_(*spec.calibration),
        channels_(std::max(1, spec.channels)),
        out_(out),
        catalog_(t_) {}

  void write() {
    plan();
    out_ << "<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<platform version=\"4.1\">\n";
    out_ << fmt::format(
        "<!-- topocoll: {} nodes, {} ranks, {} channel(s), {} connections: the platform of `topocoll sim --engine\n"
        "     simgrid` (simulator/simgrid/platform_xml.hpp). Host \"n0/gpu1/ch0\" is channel 0 of GPU n0/gpu1;\n"
        "     link \"a--b\" is the model edge between a and b (UP: from a to b). -->\n",
        t_.nodes(), t_.num_ranks(), channels_, spec_.connections.size());
    out_ << "<config>\n"
            "  <prop id=\"network/model\" value=\"CM02\"/>\n"
            "  <prop id=\"network/TCP-gamma\" value=\"0\"/>\n"
            "  <prop id=\"network/crosstraffic\" value=\"0\"/>\n"
            "</config>\n";
    out_ << "<zone id=\"cluster\" routing=\"None\">\n";
    write_links();
    for (int n = 0; n < t_.nodes(); ++n) write_node(n);
    write_bypass_routes();
    out_ << "</zone>\n</platform>\n";
  }

 private:
  const PlatformSpec& spec_;
  const topo::Topology& t_;
  const topo::Graph& g_;
  const Calibration& c_;
  const int channels_;
  std::ostream& out_;
  LinkCatalog catalog_;

  // What the zones need before they are written, gathered in a first pass over the connections.
  struct Port {
    Vertex nic = 0;
    std::vector<Step> out, in;
    bool has_out = false, has_in = false;
  };
  std::map<std::size_t, std::map<Vertex, Port>> ports_;  // by endpoint, then NIC (name order)
  std::unordered_set<const topo::Link*> used_;           // model edges some route crosses
  std::vector<double> caps_;                             // per connection: private cap link rate, 0 = none
  struct LocalRoute {
    std::size_t connection = 0;
    std::vector<Step> steps;
  };
  std::map<int, std::vector<LocalRoute>> local_;  // same-node connections by node

  std::size_t endpoint(int rank, int channel) const {
    return static_cast<std::size_t>(rank) * static_cast<std::size_t>(channels_) + static_cast<std::size_t>(channel);
  }
  std::string host_name(int rank, int channel) const {
    return fmt::format("{}/ch{}", t_.device_name(t_.rank(rank).gpu), channel);
  }
  std::string zone_name(int rank, int channel) const { return host_name(rank, channel) + ":zone"; }
  std::string port_name(int rank, int channel, Vertex nic) const {
    return fmt::format("{}@{}", host_name(rank, channel), t_.device_name(nic));
  }
  std::string cap_name(const Connection& k) const {
    return fmt::format("{}->{}:cap", host_name(k.src, k.channel), host_name(k.dst, k.channel));
  }

  // Routes are computed with one Router per source rank, so that its cache holds one rank's
  // routes (the export asks for every pair).
  template <typename F>
  void for_each_route(F&& f) {
    std::unique_ptr<Router> router;
    int router_src = -1;
    const int p = t_.num_ranks();
    for (std::size_t i = 0; i < spec_.connections.size(); ++i) {
      const Connection& k = spec_.connections[i];
      TOPOCOLL_ASSERT(k.src != k.dst && k.src >= 0 && k.dst >= 0 && k.src < p && k.dst < p && k.channel >= 0 &&
                          k.channel < channels_,
                      fmt::format("bad connection {} -> {} channel {}", k.src, k.dst, k.channel));
      if (router == nullptr || router_src != k.src) {
        router = std::make_unique<Router>(t_);
        router_src = k.src;
      }
      const Route& route = router->route(k.src, k.dst, k.channel);
      f(i, k, route, steps_of(t_, catalog_, k.src, route));
    }
  }

  void plan() {
    caps_.assign(spec_.connections.size(), 0.0);
    for_each_route([&](std::size_t i, const Connection& k, const Route& route, const std::vector<Step>& steps) {
      caps_[i] = c_.channel_cap_bytes_per_s(g_, route.links);
      for (const Step& s : steps) used_.insert(&g_[s.edge]);
      const topo::RankInfo &ra = t_.rank(k.src), &rb = t_.rank(k.dst);
      if (ra.node == rb.node) {
        local_[ra.node].push_back({i, steps});
        return;
      }
      const CrossNodeParts parts = split_cross_node(g_, steps, ra.node, rb.node);
      TOPOCOLL_ASSERT(
          !parts.out.empty() && !parts.fabric.empty() && !parts.in.empty(),
          fmt::format("route {} -> {} does not leave and enter nodes through links of their own", k.src, k.dst));
      Port& pa = ports_[endpoint(k.src, k.channel)][parts.out.back().to];
      Port& pb = ports_[endpoint(k.dst, k.channel)][parts.in.front().from];
      pa.nic = parts.out.back().to;
      pb.nic = parts.in.front().from;
      if (!pa.has_out) {
        pa.out = parts.out;
        pa.has_out = true;
      }
      if (!pb.has_in) {
        pb.in = parts.in;
        pb.has_in = true;
      }
      TOPOCOLL_ASSERT(
          same_links(pa.out, parts.out) && same_links(pb.in, parts.in),
          fmt::format("route {} -> {}: the path between a GPU and a NIC depends on the peer", k.src, k.dst));
    });
  }

  void write_links() {
    out_ << "  <zone id=\"links\" routing=\"Full\">\n";
    for (auto e : boost::make_iterator_range(boost::edges(g_)))  // the graph's order
      if (used_.contains(&g_[e]))
        out_ << fmt::format(
            "    <link id=\"{}\" bandwidth=\"{}Bps\" latency=\"{}s\" sharing_policy=\"SPLITDUPLEX\"/>\n",
            xml_escaped(catalog_.name(e)), number(c_.rate_bytes_per_s(g_, e)), number(c_.latency_s(g_, e)));
    for (std::size_t i = 0; i < spec_.connections.size(); ++i)
      if (caps_[i] > 0)
        out_ << fmt::format("    <link id=\"{}\" bandwidth=\"{}Bps\"/>\n", xml_escaped(cap_name(spec_.connections[i])),
                            number(caps_[i]));
    out_ << "  </zone>\n";
  }

  // <link_ctn> elements: the connection's cap link first (as the adapter's in_route), then the
  // walk.
  std::string link_ctns(const std::vector<Step>& steps, std::size_t connection = SIZE_MAX) const {
    std::string s;
    if (connection != SIZE_MAX && caps_[connection] > 0)
      s += fmt::format("<link_ctn id=\"{}\"/>", xml_escaped(cap_name(spec_.connections[connection])));
    for (const Step& st : steps)
      s += fmt::format("<link_ctn id=\"{}\" direction=\"{}\"/>", xml_escaped(catalog_.name(st.edge)),
                       st.up ? "UP" : "DOWN");
    return s;
  }

  void write_host(int rank, int channel) {
    const topo::RankInfo& r = t_.rank(rank);
    const topo::Device& d = g_[r.gpu];
    std::string props;
    auto prop = [&](std::string_view id, const std::string& value) {
      props += fmt::format("<prop id=\"{}\" value=\"{}\"/>", id, xml_escaped(value));
    };
    prop("kind", std::string(topo::to_string(d.kind)));
    prop("node", std::to_string(d.node));
    prop("local", std::to_string(d.local_index));
    prop("numa", std::to_string(d.numa));
    prop("rank", std::to_string(rank));
    prop("channel", std::to_string(channel));
    if (d.model >= 0) prop("model", t_.labels()[static_cast<std::size_t>(d.model)]);
    if (d.sm > 0) prop("sm", std::to_string(d.sm));
    out_ << fmt::format("      <host id=\"{}\" speed=\"{}f\">{}</host>\n", xml_escaped(host_name(rank, channel)),
                        number(spec_.compute_speed), props);
  }

  void write_node(int n) {
    std::vector<int> ranks;
    for (const topo::RankInfo& r : t_.ranks())
      if (r.node == n) ranks.push_back(r.rank);
    if (ranks.empty()) return;
    out_ << fmt::format("  <zone id=\"n{}\" routing=\"Full\">\n", n);
    for (int r : ranks)
      for (int ch = 0; ch < channels_; ++ch) {
        out_ << fmt::format("    <zone id=\"{}\" routing=\"Full\">\n", xml_escaped(zone_name(r, ch)));
        write_host(r, ch);
        const auto it = ports_.find(endpoint(r, ch));
        if (it != ports_.end()) {
          for (const auto& [nic, port] : it->second)
            out_ << fmt::format("      <router id=\"{}\"/>\n", xml_escaped(port_name(r, ch, nic)));
          const std::string host = xml_escaped(host_name(r, ch));
          for (const auto& [nic, port] : it->second) {
            const std::string router = xml_escaped(port_name(r, ch, nic));
            if (port.has_out)
              out_ << fmt::format("      <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\">{}</route>\n", host, router,
                                  link_ctns(port.out));
            if (port.has_in)
              out_ << fmt::format("      <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\">{}</route>\n", router, host,
                                  link_ctns(port.in));
          }
        }
        out_ << "    </zone>\n";
      }
    if (auto it = local_.find(n); it != local_.end())
      for (const LocalRoute& lr : it->second) {
        const Connection& k = spec_.connections[lr.connection];
        out_ << fmt::format(
            "    <zoneRoute src=\"{}\" dst=\"{}\" gw_src=\"{}\" gw_dst=\"{}\" symmetrical=\"NO\">{}</zoneRoute>\n",
            xml_escaped(zone_name(k.src, k.channel)), xml_escaped(zone_name(k.dst, k.channel)),
            xml_escaped(host_name(k.src, k.channel)), xml_escaped(host_name(k.dst, k.channel)),
            link_ctns(lr.steps, lr.connection));
      }
    out_ << "  </zone>\n";
  }

  void write_bypass_routes() {
    for_each_route([&](std::size_t i, const Connection& k, const Route&, const std::vector<Step>& steps) {
      const topo::RankInfo &ra = t_.rank(k.src), &rb = t_.rank(k.dst);
      if (ra.node == rb.node) return;
      const CrossNodeParts parts = split_cross_node(g_, steps, ra.node, rb.node);
      out_ << fmt::format("  <bypassZoneRoute src=\"{}\" dst=\"{}\" gw_src=\"{}\" gw_dst=\"{}\">{}</bypassZoneRoute>\n",
                          xml_escaped(zone_name(k.src, k.channel)), xml_escaped(zone_name(k.dst, k.channel)),
                          xml_escaped(port_name(k.src, k.channel, parts.out.back().to)),
                          xml_escaped(port_name(k.dst, k.channel, parts.in.front().from)), link_ctns(parts.fabric, i));
    });
  }
};

}  // namespace

void write_platform_xml(const PlatformSpec& spec, std::ostream& out) {
  TOPOCOLL_ASSERT(spec.topology && spec.calibration, "PlatformSpec needs a topology and a calibration");
  Writer(spec, out).write();
}

std::vector<Connection> all_pairs(const topo::Topology& t) {
  std::vector<Connection> pairs;
  const int p = t.num_ranks();
  pairs.reserve(static_cast<std::size_t>(p) * static_cast<std::size_t>(std::max(0, p - 1)));
  for (int a = 0; a < p; ++a)
    for (int b = 0; b < p; ++b)
      if (a != b) pairs.push_back({a, b, 0});
  return pairs;
}

void write_platform_xml(const topo::Topology& t, std::ostream& out) {
  const Calibration c = ideal_calibration();
  PlatformSpec spec;
  spec.topology = &t;
  spec.calibration = &c;
  spec.channels = 1;
  // Pairs the model cannot route (a GPU without a NIC, nodes without a fabric) are left out:
  // SimGrid reports "no route" between them, as the model finds none.
  for (int a = 0; a < t.num_ranks(); ++a) {
    Router router(t);
    for (int b = 0; b < t.num_ranks(); ++b) {
      if (a == b) continue;
      try {
        (void)router.route(a, b);
      } catch (const InputError&) {
        continue;
      }
      spec.connections.push_back({a, b, 0});
    }
  }
  write_platform_xml(spec, out);
}

}  // namespace topocoll::sim::sg
