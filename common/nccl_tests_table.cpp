#include "common/nccl_tests_table.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "common/errors.hpp"

namespace topocoll::nccl_tests {

namespace {

// printf into a std::string: the format strings below are nccl-tests' own, so the bytes are too.
[[gnu::format(printf, 1, 2)]] std::string cfmt(const char* format, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, format);
  const int n = std::vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  return std::string(buf, n < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
}

// The classic layout's time column (common.cu BenchTime).
std::string classic_time(double us) {
  if (us >= 10000.0) return cfmt("%7.0f", us);
  if (us >= 100.0) return cfmt("%7.1f", us);
  return cfmt("%7.2f", us);
}

// One placement's columns (util.cu writeBenchmarkLineBody; common.cu BenchTime).
std::string placement_columns(Layout layout, const Placement& p) {
  if (layout == Layout::Classic) {
    const std::string t = classic_time(p.time_us);
    return p.wrong ? cfmt("  %7s  %6.2f  %6.2f  %5g", t.c_str(), p.algbw, p.busbw, static_cast<double>(*p.wrong))
                   : cfmt("  %7s  %6.2f  %6.2f  %5s", t.c_str(), p.algbw, p.busbw, "N/A");
  }
  const std::string t = float_str(p.time_us, 7), a = float_str(p.algbw, 6), b = float_str(p.busbw, 6);
  return p.wrong ? cfmt("  %7s  %6s  %6s  %6g", t.c_str(), a.c_str(), b.c_str(), static_cast<double>(*p.wrong))
                 : cfmt("  %7s  %6s  %6s    N/A", t.c_str(), a.c_str(), b.c_str());
}

nlohmann::ordered_json json_placement(const Placement& p) {
  nlohmann::ordered_json j;
  j["time"] = p.time_us;
  j["alg_bw"] = p.algbw;
  j["bus_bw"] = p.busbw;
  j["nwrong"] = p.wrong ? nlohmann::ordered_json(static_cast<double>(*p.wrong)) : nlohmann::ordered_json(nullptr);
  return j;
}

std::string json_bool(bool b) {
  return b ? "true" : "false";  // util.cu jsonBool writes strings
}

}  // namespace

Layout parse_layout(const std::string& text, const char* flag) {
  if (text == "current" || text == "2.17" || text == "2.18" || text == "2.19" || text == "2.20") return Layout::Current;
  if (text == "classic" || text == "2.13") return Layout::Classic;
  throw InputError(fmt::format(
      "{} {}: expected current (nccl-tests 2.17 and later: 2.17, 2.18, 2.19, 2.20) or classic (2.13)", flag, text));
}

std::string float_str(double value, int width) {
  // util.cu getFloatStr: `power` is the number of integer digits of value.
  int power = 0;
  for (std::uint64_t v = 1; value >= static_cast<double>(v) && power < 20; v *= 10) power++;
  if (power < width - 2) return cfmt("%*.2f", width, value);
  if (power < width - 1) return cfmt("%*.1f", width, value);
  if (power < width + 1) return cfmt("%*.0f", width, value);
  if (width >= 7) return cfmt("%*.1e", width, value);
  if (width >= 8) return cfmt("%*.2e", width, value);
  return cfmt("%*.0e", width, value);
}

std::string run_header(Layout layout, const RunHeader& h) {
  std::string out;
  const long step = static_cast<long>(h.step);
  const char* step_kind = h.step_is_factor ? "factor" : "bytes";
  if (layout == Layout::Current) {
    // The version line names no nccl-tests release: this is topocoll's output in its layout.
    out += "# nccl-tests version topocoll nccl-headers=0 nccl-library=0\n";
    out += cfmt("# Collective test starting: %s\n", h.program.c_str());
    out += cfmt(
        "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg iters: %d "
        "validation: %d graph: %d unalign: %d\n",
        1, 1, static_cast<long>(h.min_bytes), static_cast<long>(h.max_bytes), step, step_kind, h.warmup, h.iters,
        h.agg_iters, h.check, 0, 0);
    if (h.blocking == 1) out += "# Blocking Enabled: wait for completion and barrier after each collective \n";
  } else {
    out += cfmt(
        "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg iters: %d "
        "validation: %d graph: %d\n",
        1, 1, static_cast<long>(h.min_bytes), static_cast<long>(h.max_bytes), step, step_kind, h.warmup, h.iters,
        h.agg_iters, h.check, 0);
    if (h.blocking) out += "# Blocking Enabled: wait for completion and barrier after each collective \n";
  }
  out += "#\n# Using devices\n";
  return out;
}

std::string device_line(Layout layout, const Device& d) {
  if (layout == Layout::Classic)
    return cfmt("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n", d.rank, d.group,
                static_cast<int>(d.pid), d.host.c_str(), d.device, d.pci_bus, d.name.c_str());
  return cfmt("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n", d.rank, d.group,
              static_cast<int>(d.pid), d.host.c_str(), d.device, d.pci_domain, d.pci_bus, d.pci_device, d.name.c_str());
}

std::string column_header(Layout layout) {
  std::string out = "#\n";
  out += cfmt("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
              "", "", "");
  if (layout == Layout::Classic) {
    out += cfmt("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
                "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    out += cfmt("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "",
                "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    return out;
  }
  out += cfmt("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type",
              "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", 0, "");
  out += cfmt("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "", "",
              "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, "");
  return out;
}

std::string row_line(Layout layout, const Row& r) {
  const std::string root = cfmt("%6i", r.root);
  return cfmt("%12li  %12li  %8s  %6s  %6s", static_cast<long>(r.bytes), static_cast<long>(r.count), r.type.c_str(),
              r.redop.c_str(), root.c_str()) +
         placement_columns(layout, r.out_of_place) + placement_columns(layout, r.in_place) + "\n";
}

std::string footer(Layout layout, const Footer& f) {
  const char* verdict = !f.min_bw ? "" : below_min_bw(f.avg_busbw, f.min_bw) ? "FAILED" : "OK";
  std::string out;
  out += cfmt("# %-20s : %d %s\n", "Out of bounds values", f.failed_checks, f.failed_checks ? "FAILED" : "OK");
  out += cfmt("# %-20s : %g %s\n", "Avg bus bandwidth", f.avg_busbw, verdict);
  out += "#\n";
  if (layout == Layout::Current)
    out += cfmt("# Collective test concluded: %s\n", f.program.c_str());
  else
    out += "\n";  // common.cu prints ncclGetLastError(NULL), empty without an error
  return out;
}

std::optional<double> min_bw_from(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string text = value;
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw InputError(fmt::format("NCCL_TESTS_MIN_BW={}: expected a bus bandwidth in GB/s, a number >= 0", text));
  }
  if (!(v >= 0) || !std::isfinite(v))
    throw InputError(fmt::format("NCCL_TESTS_MIN_BW={}: expected a bus bandwidth in GB/s, a number >= 0", text));
  return v;
}

bool below_min_bw(double avg_busbw, std::optional<double> min_bw) {
  return min_bw && avg_busbw < *min_bw * 0.9;
}

bool footer_failed(const Footer& f) {
  return f.failed_checks > 0 || below_min_bw(f.avg_busbw, f.min_bw);
}

nlohmann::ordered_json json_document(const JsonRun& run, const std::vector<Row>& rows, const Footer& f) {
  nlohmann::ordered_json j;
  j["version"] = 2;
  j["start_time"] = run.start_time;
  j["args"] = run.args;
  j["env"] = run.env;
  j["nccl_version"] = run.nccl_version;
  nlohmann::ordered_json config;
  const RunHeader& h = run.header;
  config["nthreads"] = 1;
  config["ngpus"] = 1;
  config["minimum_bytes"] = h.min_bytes;
  config["maximum_bytes"] = h.max_bytes;
  if (h.step_is_factor)
    config["step_factor"] = h.step;
  else
    config["step_bytes"] = h.step;
  config["warmup_iters"] = h.warmup;
  config["iterations"] = h.iters;
  config["aggregated_iterations"] = h.agg_iters;
  config["validation"] = h.check;
  config["graph"] = 0;
  config["blocking_collectives"] = json_bool(h.blocking != 0);
  config["per_iter_timing"] = json_bool(false);
  config["parallel_init"] = json_bool(false);
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const Device& d : run.devices) {
    nlohmann::ordered_json dj;
    dj["rank"] = d.rank;
    dj["group"] = d.group;
    dj["pid"] = d.pid;
    dj["hostname"] = d.host;
    dj["device"] = d.device;
    dj["device_hex"] = cfmt("%04x:%02x:%02x", d.pci_domain, d.pci_bus, d.pci_device);
    dj["device_info"] = d.name;
    devices.push_back(dj);
  }
  config["devices"] = devices;
  j["config"] = config;
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    nlohmann::ordered_json rj;
    rj["size"] = r.bytes;
    rj["count"] = r.count;
    rj["type"] = r.type;
    rj["redop"] = r.redop;
    rj["root"] = cfmt("%6i", r.root);
    rj["out_of_place"] = json_placement(r.out_of_place);
    rj["in_place"] = json_placement(r.in_place);
    rj["actual_iterations"] = h.iters;
    rj["experiment_name"] = run.experiment_name;
    results.push_back(rj);
  }
  j["results"] = results;
  j["out_of_bounds"] = {{"count", f.failed_checks}, {"okay", json_bool(f.failed_checks == 0)}};
  nlohmann::ordered_json avg;
  avg["bandwidth"] = f.avg_busbw;
  if (f.min_bw)
    avg["okay"] = json_bool(!below_min_bw(f.avg_busbw, f.min_bw));
  else
    avg["okay"] = "unchecked";
  j["average_bus_bandwidth"] = avg;
  j["errors"] = nlohmann::ordered_json::array();
  j["end_time"] = run.end_time;
  return j;
}

std::string now_string() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace topocoll::nccl_tests
