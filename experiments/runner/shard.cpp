#include "experiments/runner/shard.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "common/errors.hpp"
#include "common/records.hpp"
#include "experiments/runner/grid.hpp"

namespace fs = std::filesystem;

namespace topocoll::experiments {

namespace {

// A non-negative decimal that fits an int, nothing else.
std::optional<int> parse_count(const std::string& text) {
  int v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end || v < 0) return std::nullopt;
  return v;
}

// records.jsonl -> records (the stem the shard files are named after).
std::string base_of(const std::string& records) {
  const std::string ext = ".jsonl";
  return records.ends_with(ext) ? records.substr(0, records.size() - ext.size()) : records;
}

std::string lock_file(const std::string& records) {
  return base_of(records) + ".merge.lock";
}

nlohmann::json read_json_file(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: not a shard's done marker ({}): remove it and rerun that shard", file,
                                 std::string(e.what()).substr(0, 120)));
  }
}

// The complete lines of a file (a last line without its newline, an interrupted write, left out).
std::vector<std::string> complete_lines(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  std::vector<std::string> lines;
  std::size_t at = 0;
  for (std::size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(text.substr(at, nl - at));
  return lines;
}

// A record as `exp compare` sees it: without date, machine and commit.
nlohmann::json comparable(nlohmann::json j) {
  for (const char* k : {"date", "machine", "commit"}) j.erase(k);
  return j;
}

// Removes the merge lock when the merge ends, however it ends.
class LockGuard {
 public:
  explicit LockGuard(std::string file) : file_(std::move(file)) {}
  ~LockGuard() {
    std::error_code ec;
    fs::remove(file_, ec);
  }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  std::string file_;
};

}  // namespace

Shard parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  const std::optional<int> i = slash == std::string::npos ? std::nullopt : parse_count(text.substr(0, slash));
  const std::optional<int> n = slash == std::string::npos ? std::nullopt : parse_count(text.substr(slash + 1));
  if (!i || !n || *n < 1 || *i >= *n)
    throw InputError(fmt::format(
        "--shard {}: expected I/N with 0 <= I < N, I counted from 0 (two processes: --shard 0/2 and --shard 1/2)",
        text));
  return Shard{*i, *n, "--shard"};
}

Shard shard_from_environment(const std::function<const char*(const char*)>& env_in) {
  const auto env = [&](const char* name) -> std::optional<std::string> {
    const char* v = env_in ? env_in(name) : std::getenv(name);
    if (!v) return std::nullopt;
    return std::string(v);
  };
  const auto number = [&](const char* name, const std::string& value) {
    const std::optional<int> v = parse_count(value);
    if (!v) throw InputError(fmt::format("{}={}: expected a non-negative integer (or give --shard I/N)", name, value));
    return *v;
  };

  // The launcher: the first whose rank variable is set. srun's SLURM_PROCID counts only with the
  // step's task count: a batch script has SLURM_PROCID=0 and SLURM_NTASKS of the whole job.
  struct Launcher {
    const char *rank, *size, *label;
  };
  constexpr Launcher kLaunchers[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK/SIZE"},
      {"PMI_RANK", "PMI_SIZE", "PMI_RANK/PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID/SLURM_STEP_NUM_TASKS"},
  };
  Shard launcher;
  for (const Launcher& l : kLaunchers) {
    const auto rank = env(l.rank), size = env(l.size);
    if (!rank) continue;
    if (!size) {
      if (std::string(l.rank) == "SLURM_PROCID") continue;  // a batch script, not a step
      throw InputError(
          fmt::format("{}={} without {}: cannot tell how many shards (give --shard I/N)", l.rank, *rank, l.size));
    }
    const int r = number(l.rank, *rank), n = number(l.size, *size);
    if (n < 1 || r >= n)
      throw InputError(
          fmt::format("{}={} with {}={}: expected 0 <= rank < size (or give --shard I/N)", l.rank, r, l.size, n));
    launcher = Shard{r, n, l.label};
    break;
  }

  // A Slurm job array: the task's position in the array (its ID less the first, over the step).
  const auto task = env("SLURM_ARRAY_TASK_ID");
  if (!task) return launcher;
  const auto count = env("SLURM_ARRAY_TASK_COUNT"), min = env("SLURM_ARRAY_TASK_MIN");
  if (!count || !min)
    throw InputError(fmt::format(
        "SLURM_ARRAY_TASK_ID={} without SLURM_ARRAY_TASK_COUNT and SLURM_ARRAY_TASK_MIN (Slurm 14.03 or later sets "
        "them): give --shard I/N",
        *task));
  const auto step_text = env("SLURM_ARRAY_TASK_STEP");
  const int id = number("SLURM_ARRAY_TASK_ID", *task), m = number("SLURM_ARRAY_TASK_COUNT", *count),
            first = number("SLURM_ARRAY_TASK_MIN", *min),
            step = step_text ? number("SLURM_ARRAY_TASK_STEP", *step_text) : 1;
  if (m < 1 || step < 1 || id < first || (id - first) % step != 0 || (id - first) / step >= m)
    throw InputError(fmt::format(
        "SLURM_ARRAY_TASK_ID={} (SLURM_ARRAY_TASK_MIN={}, SLURM_ARRAY_TASK_STEP={}, SLURM_ARRAY_TASK_COUNT={}): not a "
        "position in an evenly spaced array (--array=A-B or A-B:S): give --shard I/N",
        id, first, step, m));
  const long long index = static_cast<long long>((id - first) / step) * launcher.count + launcher.index;
  const long long total = static_cast<long long>(m) * launcher.count;
  if (total > std::numeric_limits<int>::max())
    throw InputError(fmt::format("a job array of {} tasks of {} processes each: too many shards", m, launcher.count));
  Shard out{static_cast<int>(index), static_cast<int>(total), "SLURM_ARRAY_TASK_ID"};
  if (launcher.sharded()) out.source += " x " + launcher.source;
  return out;
}

std::vector<int> deal_points(const std::vector<std::string>& order, int count) {
  std::vector<int> shard(order.size(), 0);
  if (count <= 1) return shard;
  std::unordered_map<std::string, std::size_t> unit_of;  // a key less "|rep=R" -> its unit
  for (std::size_t p = 0; p < order.size(); ++p) {
    const std::string& key = order[p];
    std::string unit = key;
    if (const std::size_t r = key.rfind("|rep=");
        r != std::string::npos && key.find_first_not_of("0123456789", r + 5) == std::string::npos)
      unit = key.substr(0, r);
    const std::size_t u = unit_of.emplace(unit, unit_of.size()).first->second;
    // The snake: even rounds deal 0 .. N-1, odd rounds N-1 .. 0.
    const std::size_t n = static_cast<std::size_t>(count), round = u / n, seat = u % n;
    shard[p] = static_cast<int>(round % 2 == 0 ? seat : n - 1 - seat);
  }
  return shard;
}

ShardPoints skip_other_shards(Existing& existing, const ExpSpec& s, const Shard& shard) {
  ShardPoints n;
  const std::vector<std::string> order = point_order(s);
  const std::vector<int> dealt = deal_points(order, shard.count);
  for (std::size_t p = 0; p < order.size(); ++p) {
    if (dealt[p] != shard.index) {
      existing.points.insert(order[p]);
    } else {
      ++n.owned;
      n.written += existing.points.count(order[p]);
    }
  }
  return n;
}

std::string shard_part_file(const std::string& records, int index, int count) {
  return fmt::format("{}.shard-{}-of-{}.jsonl", base_of(records), index, count);
}
std::string shard_done_file(const std::string& records, int index, int count) {
  return fmt::format("{}.shard-{}-of-{}.done", base_of(records), index, count);
}

std::map<int, ShardFiles> find_shard_files(const std::string& records) {
  std::map<int, ShardFiles> out;
  const fs::path base(base_of(records));
  const fs::path dir = base.has_parent_path() ? base.parent_path() : fs::path(".");
  const std::string prefix = base.filename().string() + ".shard-";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  static const std::regex kName(R"(^(\d+)-of-(\d+)\.(jsonl|done)$)");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    std::smatch m;
    if (!std::regex_match(rest, m, kName)) continue;
    const std::optional<int> i = parse_count(m[1].str()), n = parse_count(m[2].str());
    if (!i || !n) continue;
    ShardFiles& f = out[*n];
    if (m[3].str() == "jsonl") {
      if (entry.file_size(ec) > 0) f.parts.insert(*i);
    } else {
      f.done.insert(*i);
      if (f.done_spec.empty()) {
        const nlohmann::json j = read_json_file(entry.path().string());
        f.done_spec = j.value("spec", std::string());
      }
    }
  }
  return out;
}

void write_done(const std::string& records, const ExpSpec& s, const Shard& shard, bool fresh,
                std::size_t records_written) {
  const nlohmann::json j = {{"shard", shard.index},
                            {"shards", shard.count},
                            {"spec", fs::absolute(s.path).lexically_normal().string()},
                            {"spec_hash", "sha256:" + s.sha256},
                            {"fresh", fresh},
                            {"records", records_written},
                            {"date", records::now_iso8601()},
                            {"machine", records::hostname()}};
  // Written whole, then renamed: a reader sees a marker complete or not at all.
  const std::string file = shard_done_file(records, shard.index, shard.count);
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump() << '\n';
    if (!out) throw InputError(fmt::format("{}: cannot write the shard's done marker", tmp));
  }
  fs::rename(tmp, file);
}

void remove_done(const std::string& records, const Shard& shard) {
  std::error_code ec;
  fs::remove(shard_done_file(records, shard.index, shard.count), ec);
}

void remove_shard_files(const std::string& records, int count) {
  std::error_code ec;
  for (int i = 0; i < count; ++i) fs::remove(shard_part_file(records, i, count), ec);
  for (int i = 0; i < count; ++i) fs::remove(shard_done_file(records, i, count), ec);
}

MergeResult merge_shards(const ExpSpec& s, const std::string& records, int count, bool lock_is_error) {
  // One merge at a time: the lock is created or the merge is someone else's. Taken before the
  // markers are read: two shards that finish together both see every marker, and the one that
  // comes second to the lock must find the first one's merge done (markers gone), not fail on it.
  const std::string lock = lock_file(records);
  const int fd = ::open(lock.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) {
    if (errno == EEXIST && !lock_is_error) return {};
    std::ifstream held(lock);
    std::string holder;
    std::getline(held, holder);
    throw InputError(
        fmt::format("{}: {}: another merge is running, or one was killed ({}): remove the file if none runs", lock,
                    errno == EEXIST ? "exists" : std::strerror(errno), holder));
  }
  const LockGuard guard(lock);
  const std::string holder = fmt::format("pid {} on {}\n", getpid(), records::hostname());
  (void)!::write(fd, holder.data(), holder.size());
  ::close(fd);

  const std::map<int, ShardFiles> found = find_shard_files(records);
  const auto it = found.find(count);
  std::vector<int> missing;
  for (int i = 0; i < count; ++i)
    if (it == found.end() || !it->second.done.count(i)) missing.push_back(i);
  // A finishing shard saw every marker before it came here: one gone now means another shard
  // merged meanwhile (a merge removes them).
  if (!missing.empty() && !lock_is_error) return {};
  if (!missing.empty())
    throw InputError(fmt::format(
        "{}: shard {} of {} is not done (no {}): run `topocoll exp run {} --shard {}/{}` first", records,
        fmt::join(missing, ", "), count, fs::path(shard_done_file(records, missing.front(), count)).filename().string(),
        s.path, missing.front(), count));
  // The markers: of this spec, and all --fresh or none.
  std::optional<bool> fresh;
  for (int i = 0; i < count; ++i) {
    const std::string marker = shard_done_file(records, i, count);
    const nlohmann::json j = read_json_file(marker);
    const std::string hash = j.value("spec_hash", std::string());
    if (hash != "sha256:" + s.sha256)
      throw InputError(
          fmt::format("{}: shard {} ran another version of the spec ({}, the spec is now sha256:{}): "
                      "rerun the shards with --fresh",
                      marker, i, hash, s.sha256.substr(0, 12)));
    const bool f = j.value("fresh", false);
    if (fresh && *fresh != f)
      throw InputError(fmt::format("{}: shard {} ran {} --fresh and shard 0 {}: rerun shard {} {} --fresh", marker, i,
                                   f ? "with" : "without", *fresh ? "with" : "without", i,
                                   *fresh ? "with" : "without"));
    fresh = f;
  }

  // Every record to its place in the single-process order.
  const std::vector<std::string> order = point_order(s);
  std::unordered_map<std::string, std::size_t> position;
  for (std::size_t p = 0; p < order.size(); ++p) position.emplace(order[p], p);
  std::vector<std::string> lines(order.size());
  std::vector<std::string> sources;
  if (!*fresh && fs::exists(records)) sources.push_back(records);
  for (int i = 0; i < count; ++i)
    if (const std::string part = shard_part_file(records, i, count); fs::exists(part)) sources.push_back(part);
  for (const std::string& file : sources) {
    const std::vector<std::string> in = complete_lines(file);
    for (std::size_t n = 0; n < in.size(); ++n) {
      if (in[n].empty()) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(in[n]);
        (void)records::record_from_json(j);
      } catch (const std::exception& e) {
        throw InputError(fmt::format("{}:{}: not a record ({}): fix or remove the file", file, n + 1,
                                     std::string(e.what()).substr(0, 120)));
      }
      const std::string point = j.value("point", std::string());
      if (j.value("spec_hash", std::string()) != "sha256:" + s.sha256)
        throw InputError(
            fmt::format("{}:{}: written from another version of the spec: rerun with --fresh", file, n + 1));
      const auto at = position.find(point);
      if (at == position.end())
        throw InputError(fmt::format("{}:{}: point {} is not a point of the grid of {}", file, n + 1, point, s.path));
      std::string& slot = lines[at->second];
      if (slot.empty()) {
        slot = in[n];
      } else if (comparable(nlohmann::json::parse(slot)) != comparable(j)) {
        throw InputError(fmt::format("{}:{}: point {} was written twice with different values", file, n + 1, point));
      }  // the same record twice (a merge interrupted after its rename): one kept
    }
  }

  // Written beside, then renamed over the records file: readers see the old file or the new one.
  const std::string tmp = records + ".merging";
  MergeResult result{true, 0, count};
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    for (const std::string& line : lines)
      if (!line.empty()) {
        out << line << '\n';
        ++result.records;
      }
    out.flush();
    if (!out) throw InputError(fmt::format("{}: writing the merged records failed", tmp));
  }
  fs::rename(tmp, records);
  // The parts first, the markers last: markers left by an interrupted cleanup still say "done".
  remove_shard_files(records, count);
  return result;
}

}  // namespace topocoll::experiments
