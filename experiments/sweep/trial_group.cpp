// A trial's recorded process group; see trial_group.hpp.
#include "experiments/sweep/trial_group.hpp"

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/dir_lock.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

constexpr const char* kRecord = "process.json";

// The fields of /proc/PID/stat after the command name, from field 3 (state) on; empty when
// there is no such process.
std::vector<std::string> stat_fields(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {};
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return {};
  std::istringstream words(stat.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string w; words >> w;) fields.push_back(w);
  return fields;
}

// Field 22: the process's start time in clock ticks since boot; -1 when there is none.
long long start_ticks(pid_t pid) {
  const auto f = stat_fields(std::to_string(pid));
  return f.size() > 19 ? std::stoll(f[19]) : -1;
}

// True when a process of group `pgid` runs (field 5); a zombie does not: it has ended, and its
// parent (a container's init may never reap) only holds its exit status.
bool group_has_live_process(pid_t pgid) {
  std::error_code ec;
  const std::string id = std::to_string(pgid);
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto f = stat_fields(pid);
    if (f.size() > 2 && f[2] == id && f[0] != "Z") return true;
  }
  return false;
}

std::string first_line(const fs::path& file) {
  std::ifstream in = io::open_regular_file(file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string boot_id() {
  return first_line("/proc/sys/kernel/random/boot_id");
}

}  // namespace

void record_trial_group(const fs::path& trial_dir, pid_t pgid) {
  const nlohmann::json r = {{"pgid", pgid},
                            {"start_ticks", start_ticks(pgid)},
                            {"host", host_name()},
                            {"boot_id", boot_id()}};
  try {
    io::atomic_write(trial_dir / kRecord, r.dump() + "\n");
  } catch (const std::exception&) {
    // The program removed its directory already: the sweep records that as its failure.
  }
}

void forget_trial_group(const fs::path& trial_dir) {
  std::error_code ec;
  fs::remove(trial_dir / kRecord, ec);
}

std::optional<pid_t> live_trial_group(const fs::path& trial_dir) {
  std::error_code ec;
  if (!fs::is_regular_file(trial_dir / kRecord, ec)) return std::nullopt;
  const auto r = nlohmann::json::parse(first_line(trial_dir / kRecord), nullptr, false);
  if (!r.is_object() || !r.contains("pgid") || !r["pgid"].is_number_integer() ||
      !r.contains("start_ticks") || !r["start_ticks"].is_number_integer())
    return std::nullopt;  // not a record this code wrote
  if (r.value("host", std::string()) != host_name() ||
      r.value("boot_id", std::string()) != boot_id())
    return std::nullopt;
  const auto pgid = r["pgid"].get<pid_t>();
  if (pgid <= 1 || !group_has_live_process(pgid)) return std::nullopt;
  // The group exists. Its id is its leader's pid, which Linux does not hand out while the group
  // lives; a leader alive with another start time means the old group ended and the id is
  // someone else's now.
  const long long ticks = start_ticks(pgid);
  if (ticks >= 0 && ticks != r["start_ticks"].get<long long>()) return std::nullopt;
  return pgid;
}

void refuse_live_trial_groups(const fs::path& trials_dir, const std::string& only) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(trials_dir, ec)) {
    if (!entry.is_directory(ec)) continue;
    if (!only.empty() && entry.path().filename() != only) continue;
    // A trial directory another process trains (an `lbt train --resume` of it by hand, or the
    // same array task submitted twice): its run.lock is held, and this sweep would clear it.
    DirLock::check(entry.path() / "run.lock", "lbt train");
    const auto pgid = live_trial_group(entry.path());
    if (!pgid) {
      forget_trial_group(entry.path());
      continue;
    }
    const std::string id = std::to_string(*pgid);
    throw ConfigError("trial " + entry.path().filename().string() + " of an earlier sweep still " +
                          "runs (process group " + id + "): a rerun would mix its output " +
                          "into the new trial's files",
                      "stop it with `kill -- -" + id + "` (or wait for it to end), then rerun");
  }
}

std::optional<ConfigError> trial_directory_in_use(const fs::path& trial_dir) {
  try {
    DirLock::check(trial_dir / "run.lock", "lbt train");
  } catch (const ConfigError& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace lbt::experiments
