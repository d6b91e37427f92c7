// The per-rank memory estimate; see memory_estimate.hpp. Each part names the code whose
// allocation it counts.
#include "trainer/memory_estimate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>

#include <sys/resource.h>

#include "core/error.hpp"
#include "core/sizes.hpp"
#include "core/tensor.hpp"

namespace lbt::trainer {
namespace {

// A Dataset's vectors: features, labels (classification) and targets (regression).
std::int64_t dataset_bytes(const data::Dataset& d) {
  return static_cast<std::int64_t>((d.x.size() + d.targets.size()) * sizeof(float) +
                                   d.labels.size() * sizeof(std::int32_t));
}

// The flat state buffers `options` gives its optimizer: built over one parameter, counted.
int optimizer_buffers(const optim::OptimizerOptions& options) {
  return static_cast<int>(optim::make_optimizer(options, 1)->state().buffers().size());
}

// data::Prefetcher: a ring of 3 batches (x, labels, targets: one float per example even for
// classification) and the sampler's indices.
std::int64_t prefetch_bytes(const MemoryModel& m, std::int64_t b) {
  constexpr int kDepth = 3;  // trainer/loop.cpp start_data_at
  const std::int64_t one = aligned_buffer_bytes(b * m.input_dim) + b * 4 +
                           aligned_buffer_bytes(b * std::max<std::int64_t>(m.target_dim, 1));
  return kDepth * one + b * 8;
}

// trainer::evaluate: one batch of inputs, labels and targets, alive while it runs.
std::int64_t evaluation_bytes(const MemoryModel& m) {
  if (m.validation_examples == 0) return 0;
  const std::int64_t rows = std::min(m.eval_batch, m.validation_examples);
  return aligned_buffer_bytes(rows * m.input_dim) + m.eval_batch * 4 +
         aligned_buffer_bytes(m.eval_batch * std::max<std::int64_t>(m.target_dim, 1));
}

constexpr std::int64_t kPageBytes = 4096;

std::int64_t pages_of(std::int64_t bytes) {
  return (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
}

// The pages of rank `rank`'s share of [0, n) in one peer's slot: ShmReducer::range_of's
// ceil(n / K) rounded up to 16 floats, a page more where the range straddles one (the slot
// starts 64-byte aligned, not page aligned, past OpenMPI's header).
std::int64_t share_pages(std::int64_t n, int workers, int rank) {
  const std::int64_t chunk = ((n + workers - 1) / workers + 15) / 16 * 16;
  const std::int64_t lo = std::min(n, rank * chunk), hi = std::min(n, lo + chunk);
  return hi > lo ? pages_of((hi - lo) * 4) + kPageBytes : 0;
}

// The reducing thread of train.overlap_comm: its stack's pages it touches (reduce_loop's frame,
// the thread descriptor and TLS glibc puts at the stack's top); it allocates nothing else.
constexpr std::int64_t kReducerThreadBytes = 3 * kPageBytes;

}  // namespace

std::int64_t shm_slot_bytes(std::int64_t n) {
  return pages_of((n + 15) / 16 * 16 * 4 + 3 * 64);
}

std::int64_t shm_peer_bytes(std::int64_t n, int workers, int rank, std::int64_t bucket_floats) {
  if (workers <= 1 || n <= 0) return 0;
  std::int64_t one_peer = kPageBytes;  // the page of its norm partial and bucket counters
  if (bucket_floats <= 0) {
    one_peer += share_pages(n, workers, rank);
  } else {
    for (std::int64_t lo = 0; lo < n; lo += bucket_floats)
      one_peer += share_pages(std::min(bucket_floats, n - lo), workers, rank);
  }
  return (workers - 1) * one_peer;
}

std::int64_t MemoryEstimate::training(bool sharded) const {
  return parameters + gradients + (sharded ? optimizer_state_sharded : optimizer_state) +
         snapshots + activations + workspace + prefetch + evaluation + communication;
}

std::int64_t MemoryEstimate::total(bool sharded) const {
  return runtime + data + std::max(load_extra, training(sharded));
}

MemoryModel memory_model(const RunConfig& run, nn::Model& model, const data::Splits& splits,
                         int workers, int threads, std::int64_t runtime_bytes) {
  MemoryModel m;
  m.model = &model;
  m.num_params = static_cast<std::int64_t>(model.store().num_params());
  m.optimizer_buffers = optimizer_buffers(run.optimizer);
  for (std::span<float> b : model.buffers()) m.layer_buffer_floats += std::ssize(b);
  m.data_bytes =
      dataset_bytes(splits.train) + dataset_bytes(splits.validation) + dataset_bytes(splits.test);
  // data::load_splits copies the validation rows out of the file's examples while they are
  // alive (the training rows then move down in place); under data.train_limit it first copies
  // the kept examples while all of the file's are alive: about one more train + validation.
  m.load_extra_bytes = dataset_bytes(splits.validation);
  if (run.train.data.train_limit > 0) m.load_extra_bytes += dataset_bytes(splits.train);
  m.weights_ema = run.train.target.enabled();
  m.input_dim = splits.train.dim;
  m.target_dim = splits.train.target_dim;
  m.validation_examples = (splits.validation.n + workers - 1) / workers;
  m.eval_batch = run.train.eval_batch;
  m.threads = threads;
  m.workers = workers;
  m.runtime_bytes = runtime_bytes;
  // experiments/train_run.cpp: gradient_memory for every multi-rank run on one node; the
  // shared parameters where share_parameters allows them (elementwise optimizer, no local SGD).
  m.shm_gradients = workers > 1;
  m.shared_params = m.shm_gradients && optim::make_optimizer(run.optimizer, 1)->elementwise() &&
                    !run.train.local_sgd.enabled();
  if (m.shm_gradients && run.train.overlap_comm)
    m.bucket_floats = static_cast<std::int64_t>(run.train.bucket_floats);
  return m;
}

std::int64_t largest_countable_micro_batch(const MemoryModel& m) {
  // Every part that grows with the batch holds a few buffers per layer output or input (a
  // BatchNorm's partial sums are 32 floats per channel): 64 floats per feature bounds them all.
  const std::int64_t features = m.model->activation_floats_per_example() + m.input_dim +
                                std::max<std::int64_t>(m.target_dim, 1) + 1;
  const std::int64_t per_example = checked_product({features, 64, 4}).value_or(INT64_MAX);
  return std::max<std::int64_t>(1, (std::int64_t{1} << 62) / per_example);
}

namespace {

// A micro-batch whose byte counts would pass 64 bits is refused naming it, not wrapped around
// into a negative or tiny estimate.
void check_countable(const MemoryModel& m, std::int64_t b, const std::string& what,
                     const std::string& fix) {
  const std::int64_t most = largest_countable_micro_batch(m);
  if (b <= most) return;
  throw ConfigError(what + " " + std::to_string(b) + " is too large to count: its bytes would " +
                        "pass 2^62 (at most " + std::to_string(most) +
                        " examples per rank for this model)",
                    fix);
}

}  // namespace

MemoryEstimate estimate_memory(const MemoryModel& m, std::int64_t b) {
  check_countable(m, b, "micro-batch",
                  "pass a smaller global batch (-b, train.global_batch) or more workers");
  if (m.validation_examples > 0)
    check_countable(m, m.eval_batch, "train.eval_batch", "set a smaller train.eval_batch");
  MemoryEstimate e;
  e.micro_batch = b;
  e.runtime = m.runtime_bytes;
  e.data = m.data_bytes;
  e.load_extra = m.load_extra_bytes;
  // ParameterStore's flat buffers, or the window slots that replace them (place_params,
  // place_grads free the store's own): every rank touches all of both.
  e.parameters =
      m.shared_params ? shm_slot_bytes(m.num_params) : aligned_buffer_bytes(m.num_params);
  e.gradients = m.shm_gradients ? shm_slot_bytes(m.num_params) : aligned_buffer_bytes(m.num_params);
  if (m.shm_gradients) {
    e.communication = shm_peer_bytes(m.num_params, m.workers, m.rank, m.bucket_floats) +
                      (m.bucket_floats > 0 ? kReducerThreadBytes : 0);
  }
  e.optimizer_state = m.optimizer_buffers * aligned_buffer_bytes(m.num_params);
  e.optimizer_state_sharded =
      m.optimizer_buffers * aligned_buffer_bytes((m.num_params + m.workers - 1) / m.workers);
  // trainer/snapshot.hpp: the loop keeps the state of the last evaluation below the target and
  // takes the next before dropping it, so two copies live at once; with a target each holds
  // the weights' EMA too, beside the live one (uncounted until 2026-11-29: 37 MiB of the CNN).
  e.snapshots = 2 * 4 * (m.num_params * (1 + m.optimizer_buffers) + m.layer_buffer_floats) +
                (m.weights_ema ? 3 * 4 * m.num_params : 0);
  // Model::reserve keeps the largest batch it has run: the evaluation's when it is larger.
  const std::int64_t widest = m.validation_examples > 0 ? std::max(b, m.eval_batch) : b;
  e.activations = m.model->activation_bytes(widest);
  e.workspace =
      std::max(m.model->workspace_bytes(b, m.threads),
               m.validation_examples > 0 ? m.model->workspace_bytes(widest, m.threads) : 0);
  e.prefetch = prefetch_bytes(m, b);
  e.evaluation = evaluation_bytes(m);
  return e;
}

// The total grows with the micro-batch: double to an upper bound, then bisect.
std::int64_t largest_micro_batch(const MemoryModel& m, std::int64_t budget, bool sharded) {
  auto fits = [&](std::int64_t b) { return estimate_memory(m, b).total(sharded) <= budget; };
  if (!fits(1)) return 0;
  const std::int64_t most = largest_countable_micro_batch(m);
  std::int64_t lo = 1, hi = 2;
  while (hi <= most && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > most) {
    if (fits(most)) return most;  // a budget no 64-bit count reaches
    hi = most;
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

std::int64_t parse_memory_size(const std::string& text, const std::string& option) {
  const ConfigError bad(
      option + " '" + text + "': expected a number and a unit such as 16GiB, 512MB",
      "units: B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers "
      "of 1024), case-insensitive, right after the number");
  std::size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  std::string unit = text.substr(digits);
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::pair<const char*, double> kUnits[] = {
      {"b", 1.0},         {"kb", 1e3},           {"mb", 1e6},
      {"gb", 1e9},        {"tb", 1e12},          {"kib", 1024.0},
      {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  const auto* found = std::find_if(std::begin(kUnits), std::end(kUnits),
                                   [&](const auto& u) { return unit == u.first; });
  if (text.size() > 1 && text[0] == '-' && std::isdigit(static_cast<unsigned char>(text[1]))) {
    throw ConfigError(option + " '" + text + "': the memory must be positive",
                      "e.g. " + option + " 16GiB");
  }
  if (digits == 0 || found == std::end(kUnits)) throw bad;
  double number = 0.0;
  if (std::sscanf(text.substr(0, digits).c_str(), "%lf", &number) != 1 ||
      std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(digits), '.') > 1)
    throw bad;
  const double bytes = std::floor(number * found->second);
  if (!(bytes >= 1.0)) {
    throw ConfigError(option + " '" + text + "': the memory must be positive (at least 1B)",
                      "e.g. " + option + " 16GiB");
  }
  if (bytes > 9.2e18) {
    throw ConfigError(option + " '" + text + "': the memory must be positive and below 8EiB",
                      "e.g. " + option + " 16GiB");
  }
  return static_cast<std::int64_t>(bytes);
}

std::string format_bytes(std::int64_t bytes) {
  return lbt::format_bytes(bytes);
}

std::int64_t peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
}

std::int64_t resident_bytes_now() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    long long kib = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lld kB", &kib) == 1) return kib * 1024;
  }
  return 0;
}

namespace {

// The first number in a file ("max", absent or unreadable: -1).
std::int64_t read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file);
  long long v = -1;
  if (!(in >> v)) return -1;
  return v;
}

// limit - usage of one cgroup directory's two files; -1 where unlimited or unreadable. v1 writes
// "no limit" as a huge page-rounded number (2^63 - 4096 on x86-64).
std::int64_t headroom_in(const std::filesystem::path& dir, const char* limit_file,
                         const char* usage_file) {
  const std::int64_t limit = read_bytes(dir / limit_file), usage = read_bytes(dir / usage_file);
  if (limit < 0 || usage < 0 || limit >= (std::int64_t{1} << 62)) return -1;
  return std::max<std::int64_t>(limit - usage, 0);
}

}  // namespace

std::int64_t cgroup_headroom_bytes(const std::filesystem::path& cgroup_root,
                                   const std::string& proc_self_cgroup) {
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // "0::/path" (v2), "4:memory:/path" or "4:cpu,memory:/path" (v1)
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::filesystem::path group =
        std::filesystem::path(line.substr(second + 1)).relative_path();
    const bool v2 = line.compare(0, first, "0") == 0 && controllers.empty();
    const bool v1 = ("," + controllers + ",").find(",memory,") != std::string::npos;
    if (!v2 && !v1) continue;
    const std::filesystem::path base = v2 ? cgroup_root : cgroup_root / "memory";
    for (const std::filesystem::path& dir : {base / group, base}) {
      const std::int64_t room =
          v2 ? headroom_in(dir, "memory.max", "memory.current")
             : headroom_in(dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
      if (room >= 0) return room;
    }
  }
  return -1;
}

std::int64_t available_memory_bytes() {
  std::int64_t available = -1;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kib) == 1) available = kib * 1024;
  }
  std::ifstream self("/proc/self/cgroup");
  const std::string groups{std::istreambuf_iterator<char>(self), {}};
  const std::int64_t room = cgroup_headroom_bytes("/sys/fs/cgroup", groups);
  if (room < 0) return available;
  return available < 0 ? room : std::min(available, room);
}

}  // namespace lbt::trainer
