// `kvbench worker` (hidden): runs cases for `kvbench run`, which supervises it. The line
// protocol is in docs/workers.md: one `ready` line with the device, then for every `case N` read
// on stdin one `row N <csv line>` on stdout. The worker writes no file; the parent writes the CSV.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "cli/plugins.hpp"
#include "cli/report.hpp"
#include "cli/worker_setup.hpp"
#include "core/csv.hpp"
#include "core/footprint.hpp"
#include "core/metadata.hpp"
#include "core/operation.hpp"
#include "kvbench_version.hpp"
#include "runtime/calibrate.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device_info.hpp"
#include "runtime/planted_delay.hpp"
#include "runtime/planted_fault.hpp"
#include "runtime/runner.hpp"
#include "runtime/timer.hpp"

namespace kvbench::cli {
namespace {

// The protocol channel: the original stdout. Everything else the process prints (launch floor,
// calibration, warnings) goes to stderr, so no stray printf can break a protocol line.
class Channel {
 public:
  Channel() : out_(fdopen(dup(STDOUT_FILENO), "w")) {
    std::fflush(stdout);
    dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  void send(const std::string& line) {
    std::fputs((line + "\n").c_str(), out_);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
};

std::optional<std::uint64_t> device_free_bytes() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
  constexpr std::uint64_t kMargin = std::uint64_t{256} << 20;  // timer, flush buffer, fragmentation
  return free > kMargin ? free - kMargin : 0;
}

std::uint64_t status_kb(const char* key) {  // a "VmHWM:  123 kB" line of /proc/self/status
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::strtoull(line.c_str() + std::strlen(key), nullptr, 10);
  return 0;
}

// KVBENCH_MEMORY_REPORT: the estimate against what the case really took. Host: the peak resident
// set while the case runs (reset through /proc/self/clear_refs before it) less the resident set
// of the worker before its first case, so host data kept from the previous case (runner.cpp
// reuses it across variants) counts where the case uses it; device: the largest drop of free
// memory, sampled every millisecond while the case runs.
class MemoryProbe {
 public:
  explicit MemoryProbe(bool on) : on_(on), rss_before_kb_(on ? status_kb("VmRSS:") : 0) {}
  ~MemoryProbe() { stop(); }
  void stop() {
    stop_ = true;
    if (poller_.joinable()) poller_.join();
  }
  void start() {
    if (!on_) return;
    std::ofstream("/proc/self/clear_refs") << "5";
    std::size_t total = 0;
    cudaMemGetInfo(&free_before_, &total);
    min_free_ = free_before_;
    stop_ = false;
    poller_ = std::thread([this] {
      while (!stop_) {
        std::size_t f = 0, t = 0;
        if (cudaMemGetInfo(&f, &t) == cudaSuccess && f < min_free_) min_free_ = f;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  void report(std::size_t index, const Footprint& f) {
    if (!on_) return;
    stop();
    const std::uint64_t peak_kb = status_kb("VmHWM:");
    const std::uint64_t host = (peak_kb > rss_before_kb_ ? peak_kb - rss_before_kb_ : 0) * 1024;
    const std::uint64_t device = free_before_ - min_free_;
    std::fprintf(stderr,
                 "memory case %zu: estimate host %llu device %llu bytes; measured host %llu "
                 "(peak RSS over the idle worker's) device %llu (free-memory drop)\n",
                 index, static_cast<unsigned long long>(f.host()),
                 static_cast<unsigned long long>(f.device()), static_cast<unsigned long long>(host),
                 static_cast<unsigned long long>(device));
  }

 private:
  bool on_;
  std::uint64_t rss_before_kb_;  // the worker's, before its first case
  std::size_t free_before_ = 0;
  std::atomic<std::size_t> min_free_{0};
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

struct WorkerArgs {
  std::string config_path;
  std::string setup;        // WorkerSetup as JSON (cli/worker_setup.hpp)
  bool skip_floor = false;  // a worker replacing one that died: the parent has the launch floor
};

// `samples N <µs> <µs> ...`: a timed row's samples, in the order they were taken.
std::string samples_line(std::size_t index, const std::vector<double>& samples_us) {
  std::string line = "samples " + std::to_string(index);
  char buf[32];
  for (double v : samples_us) {
    std::snprintf(buf, sizeof buf, " %.7g", v);
    line += buf;
  }
  return line;
}

// A failed row whose device is left unusable (a sticky error): the reason names the fault.
bool device_faulted(Row& row) {
  cudaGetLastError();
  const cudaError_t err = cudaDeviceSynchronize();
  if (err == cudaSuccess) return false;
  row.status = Status::failed;
  row.timed = false;
  row.reason = std::string("device fault: ") + cudaGetErrorString(err);
  return true;
}

// The launch floor, measured before the calibration: after one in the same process, the
// graph-mode floor reads higher (docs/measurement.md, "The launch floor").
std::vector<FloorEntry> launch_floor(const RunSettings& settings, const DeviceDetails& details) {
  std::vector<FloorEntry> floor;
  for (const LaunchFloor& f : measure_launch_floor(settings, details.max_sm_clock_mhz)) {
    floor.push_back(
        {f.mode, f.m.stats, f.m.launches_per_sample, f.m.sm_clock_mhz, f.clock_low, f.attempts});
    std::printf(
        "launch floor (empty kernel), %-5s %8.3f us  (p10 %.3f, p90 %.3f, %d samples, "
        "%d per window, SM clock %.0f MHz%s) on %s\n",
        std::string(to_string(f.mode)).c_str(), f.m.stats.median_us, f.m.stats.p10_us,
        f.m.stats.p90_us, f.m.stats.samples, f.m.launches_per_sample, f.m.sm_clock_mhz,
        f.clock_low ? ", LOW: not at its steady clock" : "", details.uuid.c_str());
    if (f.clock_low)
      std::fprintf(stderr,
                   "kvbench: warning: the %s launch floor was measured at %.0f MHz, below "
                   "%.0f%% of the %.0f MHz maximum, twice; read it as high\n",
                   std::string(to_string(f.mode)).c_str(), f.m.sm_clock_mhz,
                   100 * kClockLowFraction, details.max_sm_clock_mhz);
  }
  return floor;
}

// A worker after `ready`: the config's cases, run one per request.
class CaseRunner {
 public:
  CaseRunner(const Config& config, const ValidationOptions& validation,
             const LaunchOverride& launches, const DeviceInfo& device, const DeviceDetails& details,
             const Calibration& calibration, bool send_samples)
      : config_(config),
        validation_(validation),
        launches_(launches),
        device_(device),
        details_(details),
        calibration_(calibration),
        plant_(std::getenv("KVBENCH_PLANT_FAULT")),
        send_samples_(send_samples),
        delays_(planted_delays()),
        probe_(memory_report_asked()) {}

  // Serves `case N` requests from stdin until it closes; a device fault ends the process.
  void serve(Channel& channel) {
    char line[256];
    while (std::fgets(line, sizeof line, stdin)) {
      std::size_t index = 0;
      char extra = 0;
      if (std::sscanf(line, "case %zu %c", &index, &extra) != 1 || index >= config_.cases.size())
        throw std::invalid_argument(std::string("worker: bad request '") + line + "'");
      Row row = run(index);
      const bool fault = row.status == Status::failed && device_faulted(row);
      if (send_samples_ && row.timed) channel.send(samples_line(index, row.samples_us));
      channel.send("row " + std::to_string(index) + " " + csv_line(row));
      if (!blocking_noted_ && blocking_kernel_timed_out()) {
        channel.send("note blocking_kernel_timed_out");
        blocking_noted_ = true;
      }
      if (fault) {
        channel.send("bye device fault");
        std::fflush(nullptr);
        std::_Exit(kDevice);  // no teardown of a context that the fault left corrupted
      }
    }
  }

 private:
  // KVBENCH_PLANT_DELAY_NS: NS for every case, or CASE:NS,CASE:NS,... (other cases: 0).
  static std::optional<std::map<std::size_t, long long>> planted_delays() {
    const char* text = std::getenv("KVBENCH_PLANT_DELAY_NS");
    if (!text || !*text) return std::nullopt;
    std::map<std::size_t, long long> out;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
      const auto colon = item.find(':');
      char* end = nullptr;
      const std::string ns = colon == std::string::npos ? item : item.substr(colon + 1);
      const long long v = std::strtoll(ns.c_str(), &end, 10);
      const long long index = colon == std::string::npos
                                  ? -1
                                  : std::strtoll(item.substr(0, colon).c_str(), nullptr, 10);
      if (ns.empty() || *end != 0 || v < 0 || v > 1'000'000'000 ||
          (colon != std::string::npos && index < 0))
        throw std::invalid_argument(
            std::string("KVBENCH_PLANT_DELAY_NS: not NS or CASE:NS,...: '") + text + "'");
      out[index < 0 ? kEveryCase : static_cast<std::size_t>(index)] = v;
    }
    std::fprintf(stderr,
                 "kvbench: worker: every cache write by the planted kernel (delays %s ns)\n", text);
    return out;
  }
  static constexpr std::size_t kEveryCase = static_cast<std::size_t>(-1);

  // The planted kernel's launch for case `index`, with its delay.
  LaunchOverride delayed(std::size_t index) const {
    auto it = delays_->find(index);
    if (it == delays_->end()) it = delays_->find(kEveryCase);
    return planted_delay_launch(it == delays_->end() ? 0 : it->second);
  }

  static bool memory_report_asked() {
    const char* report = std::getenv("KVBENCH_MEMORY_REPORT");
    return report && *report && std::string(report) != "0";
  }

  // Case `index`'s row: refused when it does not fit in memory, else validated and timed.
  Row run(std::size_t index) {
    const Case& c = config_.cases[index];
    const RunSettings& settings = config_.settings;
    char tag[32];
    std::snprintf(tag, sizeof tag, "case%04zu", index);  // the case's index in `kvbench list`
    validation_.case_tag = tag;
    const Footprint need = case_footprint(c);
    // An explicit rotation is admitted at its set count; `auto` caps its own (core/rotation.hpp).
    const int sets = settings.rotate == kRotateAuto ? 1 : settings.rotate;
    const std::string refusal =
        admission_refusal(need, sets, host_available_bytes(), device_free_bytes());
    Row row;
    if (!refusal.empty()) {
      row.c = c;
      row.device = device_.name;
      row.device_uuid = device_.uuid;
      row.git_sha = kGitSha;
      row.git_dirty = kGitDirty;
      row.status = Status::failed;
      row.reason = refusal;
    } else {
      const bool planted = plant_ && std::strtoull(plant_, nullptr, 10) == index && *plant_;
      probe_.start();
      row = run_case(c, settings, device_, validation_,
                     planted   ? planted_fault_launch()
                     : delays_ ? delayed(index)
                               : launches_);
      probe_.report(index, need);
    }
    add_derived(row, calibration_.measured_peak_gbps, calibration_.theoretical_peak_gbps,
                details_.max_sm_clock_mhz);
    if (row.clock_low)
      std::fprintf(stderr,
                   "kvbench: warning: case %zu ran at %.0f MHz, below %.0f%% of the "
                   "%.0f MHz maximum (throttled?)\n",
                   index, row.sm_clock_mhz, 100 * kClockLowFraction, details_.max_sm_clock_mhz);
    return row;
  }

  const Config& config_;
  ValidationOptions validation_;
  const LaunchOverride& launches_;  // the plugins' variants
  const DeviceInfo& device_;
  const DeviceDetails& details_;
  const Calibration& calibration_;
  const char* plant_;        // KVBENCH_PLANT_FAULT: the case whose launch faults
  const bool send_samples_;  // a `samples` line before each timed row
  // KVBENCH_PLANT_DELAY_NS: every cache write by the test-only delayed kernel (gate proofs)
  const std::optional<std::map<std::size_t, long long>> delays_;
  MemoryProbe probe_;
  bool blocking_noted_ = false;
};

int cmd_worker(const WorkerArgs& args) {
  Channel channel;
  try {
    const WorkerSetup setup = worker_setup_from_json(args.setup);
    // Plugins first: the config names their variants.
    LaunchOverride launches;
    if (!setup.plugins.empty()) {
      std::vector<std::string> paths;  // the shared objects; in-process variants are here already
      for (const auto& p : nlohmann::json::parse(setup.plugins))
        if (!p.value("in_process", false)) paths.push_back(p.at("path"));
      const plugin::Plugins& plugins = load_plugin_variants(paths);
      check_plugins_unchanged(plugins, setup.plugins);
      launches = with_plugin_launches(std::move(launches), plugins);
    }
    Config config = load_config(args.config_path, setup.max_cases);
    if (!setup.variants.empty()) config.cases = with_variants(config.cases, setup.variants);
    config.settings = setup.settings;  // resolved by `run`: the config's, with its flags
    ValidationOptions validation;
    validation.save_tensors_dir = setup.save_tensors_dir;
    validation.save_all = setup.save_all;
    validation.check_bounds = setup.check_bounds;
    const DeviceInfo device = open_device();
    const DeviceDetails details = device_details();
    const std::vector<FloorEntry> floor =
        args.skip_floor ? std::vector<FloorEntry>{} : launch_floor(config.settings, details);
    const CalibrationResult cal = load_or_calibrate(details, false);
    print_calibration(cal);
    std::fflush(stdout);
    channel.send("ready " + device_entry_json(details, cal.calibration, floor));
    CaseRunner(config, validation, launches, device, details, cal.calibration, setup.samples)
        .serve(channel);
    return kOk;
  } catch (const std::exception&) {
    const Failure f = current_failure();
    channel.send("fatal " + std::to_string(f.code) + " " + f.message);
    return f.code;
  }
}

}  // namespace

// Hidden: the worker `run` starts (docs/workers.md).
Command add_worker(CLI::App& app) {
  auto a = std::make_shared<WorkerArgs>();
  CLI::App* worker = app.add_subcommand("worker", "");
  worker->group("");
  worker->add_option("config", a->config_path)->required();
  worker->add_option("--setup", a->setup)->required();
  worker->add_flag("--skip-floor", a->skip_floor);
  return {worker, [a] { return cmd_worker(*a); }};
}

}  // namespace kvbench::cli
