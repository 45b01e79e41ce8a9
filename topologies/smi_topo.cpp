#include "topologies/smi_topo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <vector>

#include "common/errors.hpp"
#include "topologies/constants.hpp"
#include "topologies/nccl_xml.hpp"

namespace topocoll::topo {

namespace c = constants;

namespace {

// Assumptions for what the matrix does not say, each named in a note.
// PCIe: NCCL's fallback for an unknown link speed is Gen3 (src/graph/topo.cc, kvDictPciGen),
// and an unknown width x16 ("if (width == 0) width = 16").
constexpr double kAssumedPcieGts = 8.0;
// NVLink: 25 GB/s per link per direction, the rate of NVLink 2, 3 and 4 (V100, A100, H100;
// constants.hpp cites the datasheets). Blackwell's NVLink 5 doubles it.
constexpr double kAssumedNvlinkGbps = c::kNvlink4GbpsPerLink;
constexpr int kMaxDevices = 256;  // GPUs + NICs in one matrix
constexpr int kMaxNvlinks = 64;

// How two devices of the matrix are joined, nearest first.
enum class Rel { Self, Nv, Pix, Pxb, Phb, Node, Sys };

struct Cell {
  Rel rel = Rel::Sys;
  int nvlinks = 0;  // NV#
};

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::optional<int> integer(std::string_view s) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(static_cast<std::size_t>(n)) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[static_cast<std::size_t>(x)] != x)
      x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  }
  void join(int a, int b) { parent[static_cast<std::size_t>(find(a))] = find(b); }
};

class SmiImporter {
 public:
  SmiImporter(std::string_view text, std::string name) : name_(std::move(name)), lines_(lines_of(text)) {}

  NodeModel run() {
    parse_header();
    parse_rows();
    check_symmetric();
    parse_legend();
    build();
    return std::move(model_);
  }

 private:
  [[noreturn]] void fail(std::size_t line_index, std::string_view found, std::string_view expected) const {
    throw InputError(fmt::format("{}:{}: {}: expected {}", name_, line_index + 1, found, expected));
  }

  // --- header ---------------------------------------------------------------------------------

  void parse_header() {
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const auto w = words(lines_[i]);
      if (w.empty()) continue;
      if (w.front() != "GPU0")
        fail(i, fmt::format("'{}'", w.front()),
             "the header line of `nvidia-smi topo -m` (GPU0 GPU1 ... NIC0 ... CPU Affinity ...)");
      header_line_ = i;
      for (std::string_view word : w) {
        if (word == "CPU" || word == "NUMA") break;  // "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"
        columns_.emplace_back(word);
      }
      for (std::size_t k = 0; k < w.size(); ++k) {
        if (w[k] == "CPU") has_cpu_affinity_ = true;
        if (w[k] == "NUMA" && (k == 0 || w[k - 1] != "GPU")) has_numa_affinity_ = true;
      }
      break;
    }
    if (columns_.empty())
      throw InputError(fmt::format("{}: empty: expected the matrix of `nvidia-smi topo -m`", name_));
    if (static_cast<int>(columns_.size()) > kMaxDevices)
      fail(header_line_, fmt::format("{} columns", columns_.size()),
           fmt::format("at most {} GPUs and NICs (the limit kMaxDevices)", kMaxDevices));
    for (std::size_t k = 0; k < columns_.size(); ++k) {
      const bool gpu = columns_[k].starts_with("GPU");
      if (gpu && columns_[k] != fmt::format("GPU{}", gpus_))
        fail(header_line_, fmt::format("column '{}'", columns_[k]),
             fmt::format("GPU{} (GPUs numbered in order)", gpus_));
      if (gpu && k != static_cast<std::size_t>(gpus_))
        fail(header_line_, fmt::format("column '{}' after a NIC column", columns_[k]), "the GPU columns first");
      gpus_ += gpu ? 1 : 0;
    }
    cells_.assign(columns_.size(), std::vector<std::optional<Cell>>(columns_.size()));
    row_line_.assign(columns_.size(), 0);
    numa_.assign(static_cast<std::size_t>(gpus_), -1);
  }

  // --- rows -----------------------------------------------------------------------------------

  Cell cell(std::size_t line, std::string_view text, std::size_t row, std::size_t col) const {
    if (text == "X") {
      if (row != col)
        fail(line, fmt::format("X between {} and {}", columns_[row], columns_[col]), "X on the diagonal only");
      return {Rel::Self, 0};
    }
    if (row == col) fail(line, fmt::format("'{}' on the diagonal ({})", text, columns_[row]), "X");
    if (text == "PIX") return {Rel::Pix, 0};
    if (text == "PXB") return {Rel::Pxb, 0};
    if (text == "PHB") return {Rel::Phb, 0};
    if (text == "NODE") return {Rel::Node, 0};
    if (text == "SYS") return {Rel::Sys, 0};
    if (text.starts_with("NV")) {
      const std::optional<int> n = integer(text.substr(2));
      if (n && *n >= 1 && *n <= kMaxNvlinks) return {Rel::Nv, *n};
    }
    fail(line, fmt::format("cell '{}' ({} to {})", text, columns_[row], columns_[col]),
         fmt::format("X, NV# (# from 1 to {}), PIX, PXB, PHB, NODE or SYS", kMaxNvlinks));
  }

  void parse_rows() {
    for (std::size_t i = header_line_ + 1; i < lines_.size(); ++i) {
      const auto w = words(lines_[i]);
      if (w.empty()) continue;
      if (w.front() == "Legend:" || w.front() == "NIC") break;
      const auto it = std::find(columns_.begin(), columns_.end(), w.front());
      if (it == columns_.end())
        fail(i, fmt::format("row '{}'", w.front()), "a row named by a column of the header (GPU0 ... NIC0 ...)");
      const std::size_t row = static_cast<std::size_t>(it - columns_.begin());
      if (row_line_[row] != 0)
        fail(i, fmt::format("row {} again (first on line {})", w.front(), row_line_[row] + 1), "one row per device");
      row_line_[row] = i;
      const std::size_t n = columns_.size();
      if (w.size() < n + 1)
        fail(i, fmt::format("row {} with {} cells", w.front(), w.size() - 1),
             fmt::format("{} cells, one per column of the header", n));
      for (std::size_t k = 0; k < n; ++k) cells_[row][k] = cell(i, w[k + 1], row, k);
      // GPU rows: CPU Affinity, NUMA Affinity, GPU NUMA ID.
      if (row < static_cast<std::size_t>(gpus_) && has_numa_affinity_) {
        const std::size_t at = n + 1 + (has_cpu_affinity_ ? 1 : 0);
        if (at < w.size())
          if (const std::optional<int> numa = integer(w[at]); numa && *numa >= 0 && *numa < 1024) numa_[row] = *numa;
      }
    }
    for (int g = 0; g < gpus_; ++g)
      if (row_line_[static_cast<std::size_t>(g)] == 0)
        fail(header_line_, fmt::format("no row for GPU{}", g), "a row for every GPU column");
  }

  // A cell, from its row or (for a NIC row the paste left out) from the other device's row.
  Cell at(std::size_t a, std::size_t b) const {
    if (cells_[a][b]) return *cells_[a][b];
    if (cells_[b][a]) return *cells_[b][a];
    return {Rel::Sys, 0};  // two NICs whose rows the paste left out: joined through the GPUs only
  }

  void check_symmetric() {
    const std::size_t n = columns_.size();
    for (std::size_t a = 0; a < n; ++a) {
      if (row_line_[a] == 0 && a >= static_cast<std::size_t>(gpus_)) ++missing_nic_rows_;
      for (std::size_t b = a + 1; b < n; ++b) {
        if (cells_[a][b] && cells_[b][a] &&
            (cells_[a][b]->rel != cells_[b][a]->rel || cells_[a][b]->nvlinks != cells_[b][a]->nvlinks))
          fail(row_line_[b],
               fmt::format("{} to {} differs from {} to {} (line {})", columns_[b], columns_[a], columns_[a],
                           columns_[b], row_line_[a] + 1),
               "a symmetric matrix");
        if (at(a, b).rel == Rel::Nv && (a >= static_cast<std::size_t>(gpus_) || b >= static_cast<std::size_t>(gpus_)))
          fail(row_line_[a] ? row_line_[a] : row_line_[b],
               fmt::format("NV{} between {} and {}", at(a, b).nvlinks, columns_[a], columns_[b]),
               "NVLink between GPUs only");
      }
    }
  }

  void parse_legend() {
    // "NIC0: mlx5_0" lines after "NIC Legend:".
    for (std::size_t i = header_line_ + 1; i < lines_.size(); ++i) {
      const auto w = words(lines_[i]);
      if (w.size() == 2 && w[0].ends_with(":")) {
        const std::string column(w[0].substr(0, w[0].size() - 1));
        if (std::find(columns_.begin(), columns_.end(), column) != columns_.end()) nic_names_[column] = w[1];
      }
    }
  }

  // --- model ----------------------------------------------------------------------------------

  void build() {
    const int n = static_cast<int>(columns_.size());
    model_.name = name_;
    // NUMA nodes: devices joined by anything but SYS.
    UnionFind numa_groups(n), phb(n), pxb(n), pix(n);
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) {
        const Rel r = at(static_cast<std::size_t>(a), static_cast<std::size_t>(b)).rel;
        if (r != Rel::Sys && r != Rel::Nv) numa_groups.join(a, b);
        if (r == Rel::Pix || r == Rel::Pxb || r == Rel::Phb) phb.join(a, b);
        if (r == Rel::Pix || r == Rel::Pxb) pxb.join(a, b);
        if (r == Rel::Pix) pix.join(a, b);
      }
    // NVLink-joined GPUs with no PCIe relation in the matrix (NV# hides it) share the NUMA node
    // NUMA Affinity gives; the groups are numbered by that, else in order.
    std::map<int, int> numa_of_group;
    for (int g = 0; g < gpus_; ++g)
      if (numa_[static_cast<std::size_t>(g)] >= 0)
        numa_of_group.emplace(numa_groups.find(g), numa_[static_cast<std::size_t>(g)]);
    std::map<int, int> numa_ids;  // NUMA id -> Cpu vertex index
    std::vector<int> device_numa(static_cast<std::size_t>(n));
    int next_free = 0;
    for (const auto& [group, numa] : numa_of_group) next_free = std::max(next_free, numa + 1);
    for (int d = 0; d < n; ++d) {
      const int group = numa_groups.find(d);
      auto it = numa_of_group.find(group);
      if (it == numa_of_group.end()) it = numa_of_group.emplace(group, next_free++).first;
      device_numa[static_cast<std::size_t>(d)] = it->second;
      numa_ids.emplace(it->second, 0);
    }
    std::map<int, Vertex> cpu;
    for (auto& [numa, unused] : numa_ids) cpu[numa] = model_.add_device(DeviceKind::Cpu, numa);
    std::vector<Vertex> vertex(static_cast<std::size_t>(n));
    for (int g = 0; g < gpus_; ++g)
      vertex[static_cast<std::size_t>(g)] = model_.add_gpu(device_numa[static_cast<std::size_t>(g)], 0);
    const double pcie_gbps = c::kPcieDefaultWidth * *c::pcie_gbps_per_lane(kAssumedPcieGts);
    for (int d = gpus_; d < n; ++d)
      vertex[static_cast<std::size_t>(d)] = model_.add_nic(device_numa[static_cast<std::size_t>(d)], pcie_gbps);

    // PCIe: a PXB group of more than one device gets an upper switch under its CPU; a PIX group
    // of more than one a switch (under the upper switch, if any); a device alone in a PXB group
    // hangs from the CPU, alone in its PIX group inside a PXB group from a switch of its own.
    auto add_pcie = [&](Vertex a, Vertex b) {
      model_.add_link(a, b, LinkKind::Pcie, pcie_gbps, c::kPcieLatencyUs, c::kPcieDefaultWidth);
    };
    auto size_of = [&](UnionFind& uf, int d) {
      int k = 0;
      for (int e = 0; e < n; ++e) k += uf.find(e) == uf.find(d) ? 1 : 0;
      return k;
    };
    std::map<int, Vertex> upper, lower;
    for (int d = 0; d < n; ++d) {
      const Vertex socket = cpu.at(device_numa[static_cast<std::size_t>(d)]);
      Vertex parent = socket;
      if (size_of(pxb, d) > 1) {
        const int key = pxb.find(d);
        if (!upper.contains(key)) {
          upper[key] = model_.add_device(DeviceKind::PcieSwitch, device_numa[static_cast<std::size_t>(d)]);
          add_pcie(socket, upper[key]);
        }
        parent = upper[key];
        const int low = pix.find(d);
        if (!lower.contains(low)) {
          lower[low] = model_.add_device(DeviceKind::PcieSwitch, device_numa[static_cast<std::size_t>(d)]);
          add_pcie(parent, lower[low]);
        }
        parent = lower[low];
      }
      add_pcie(parent, vertex[static_cast<std::size_t>(d)]);
      if (size_of(phb, d) > size_of(pxb, d)) ++phb_devices_;
    }
    // The CPUs of one machine, each pair (NCCL's Skylake figure: the CPU model is not in the matrix).
    for (auto a = cpu.begin(); a != cpu.end(); ++a)
      for (auto b = std::next(a); b != cpu.end(); ++b)
        model_.add_link(a->second, b->second, LinkKind::InterSocket, c::kInterSocketIntelSkylakeGbps,
                        c::kInterSocketLatencyUs);

    // NVLink.
    std::map<int, int> nv_counts;  // NV# -> pairs
    int nv_pairs = 0;
    for (int a = 0; a < gpus_; ++a)
      for (int b = a + 1; b < gpus_; ++b) {
        const Cell x = at(static_cast<std::size_t>(a), static_cast<std::size_t>(b));
        if (x.rel == Rel::Nv) {
          ++nv_counts[x.nvlinks];
          ++nv_pairs;
        }
      }
    const int all_pairs = gpus_ * (gpus_ - 1) / 2;
    if (gpus_ >= 3 && nv_pairs == all_pairs && nv_counts.size() == 1) {
      // Every pair NV#: the GPUs reach each other through NVSwitch with # links each.
      const int lanes = nv_counts.begin()->first;
      const Vertex nvs = model_.add_device(DeviceKind::NvSwitch);
      for (int g = 0; g < gpus_; ++g)
        model_.add_link(vertex[static_cast<std::size_t>(g)], nvs, LinkKind::NvLink, lanes * kAssumedNvlinkGbps,
                        c::kNvlinkLatencyUs, lanes);
      nvlink_shape_ = fmt::format("every GPU pair NV{}: one NVSwitch, {} links per GPU", lanes, lanes);
    } else if (nv_pairs > 0) {
      for (int a = 0; a < gpus_; ++a)
        for (int b = a + 1; b < gpus_; ++b) {
          const Cell x = at(static_cast<std::size_t>(a), static_cast<std::size_t>(b));
          if (x.rel == Rel::Nv)
            model_.add_link(vertex[static_cast<std::size_t>(a)], vertex[static_cast<std::size_t>(b)], LinkKind::NvLink,
                            x.nvlinks * kAssumedNvlinkGbps, c::kNvlinkLatencyUs, x.nvlinks);
        }
      nvlink_shape_ = fmt::format("{} GPU pair(s) joined by direct NVLinks", nv_pairs);
    }
    notes(nv_pairs, pcie_gbps);
    model_.description = fmt::format(
        "nvidia-smi topo -m matrix {}: GPU x{}, NUMA node x{}, PCIe switch x{}, NVSwitch x{}, NIC x{}", name_, gpus_,
        cpu.size(), model_.count(DeviceKind::PcieSwitch), model_.count(DeviceKind::NvSwitch), n - gpus_);
  }

  void notes(int nv_pairs, double pcie_gbps) {
    auto& out = model_.notes;
    out.push_back(fmt::format(
        "{}: the matrix names no GPU model: compute capability unknown (sm 0); set the node's GPU with a YAML "
        "node description instead of the matrix to model it",
        name_));
    if (nv_pairs > 0)
      out.push_back(
          fmt::format("{}: {}; NVLink generation unknown: {:g} GB/s per link assumed (NVLink 2-4); set `{}` "
                      "in a YAML cluster spec for another rate",
                      name_, nvlink_shape_, kAssumedNvlinkGbps, kNvlinkOverrideKey));
    else if (gpus_ > 1)
      out.push_back(nvlink_unknown_note(name_, gpus_, "no NV# cell in the matrix"));
    out.push_back(
        fmt::format("{}: PCIe generation and widths unknown: every PCIe link taken as Gen3 x16 ({:.2f} GB/s), "
                    "NCCL's fallback for an unknown link",
                    name_, pcie_gbps));
    if (columns_.size() > static_cast<std::size_t>(gpus_)) {
      std::string names;
      for (std::size_t k = static_cast<std::size_t>(gpus_); k < columns_.size(); ++k) {
        const auto it = nic_names_.find(columns_[k]);
        names += fmt::format("{}{}{}", names.empty() ? "" : ", ", columns_[k],
                             it == nic_names_.end() ? "" : "=" + it->second);
      }
      out.push_back(
          fmt::format("{}: {} NIC(s) ({}) with no speed in the matrix: port rate assumed equal to the PCIe "
                      "link ({:.2f} GB/s); set it with `overrides: {{nic_gbps: ...}}` in a YAML cluster spec",
                      name_, columns_.size() - static_cast<std::size_t>(gpus_), names, pcie_gbps));
    }
    out.push_back(fmt::format("{}: CPU model unknown: inter-socket links {:g} GB/s (NCCL's Skylake figure)", name_,
                              c::kInterSocketIntelSkylakeGbps));
    if (missing_nic_rows_ > 0)
      out.push_back(
          fmt::format("{}: {} NIC row(s) missing: their relations read from the GPU rows, NIC-to-NIC ones taken as SYS",
                      name_, missing_nic_rows_));
    if (phb_devices_ > 0)
      out.push_back(fmt::format("{}: {} device(s) meet others at a host bridge (PHB): linked to their CPU directly",
                                name_, phb_devices_));
  }

  std::string name_;
  std::vector<std::string_view> lines_;
  std::size_t header_line_ = 0;
  std::vector<std::string> columns_;
  bool has_cpu_affinity_ = false, has_numa_affinity_ = false;
  int gpus_ = 0;
  std::vector<std::vector<std::optional<Cell>>> cells_;
  std::vector<std::size_t> row_line_;  // 0: no row (line 1 is never a row: the header comes first)
  std::vector<int> numa_;              // per GPU, -1 unknown
  std::map<std::string, std::string> nic_names_;
  int missing_nic_rows_ = 0, phb_devices_ = 0;
  std::string nvlink_shape_;
  NodeModel model_;
};

}  // namespace

bool looks_like_smi_topo(std::string_view text) {
  for (std::string_view line : lines_of(text)) {
    const auto w = words(line);
    if (w.empty()) continue;
    return w.front() == "GPU0";
  }
  return false;
}

NodeModel parse_smi_topo(std::string_view text, const std::string& source_name) {
  return SmiImporter(text, source_name).run();
}

NodeModel load_smi_topo(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the file: expected the text of `nvidia-smi topo -m`", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_smi_topo(text.str(), path);
}

}  // namespace topocoll::topo
