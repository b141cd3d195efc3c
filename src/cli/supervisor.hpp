// The parent side of `kvbench run`: worker processes (`kvbench worker`, or the command in
// KVBENCH_WORKER) that run the cases, one long-lived worker per device, cases dealt to whichever
// is free. A worker that dies, hangs or reports a device fault costs its case only: the case gets
// a failure reason, a fresh worker takes the next one. The protocol is in docs/workers.md.
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvbench::cli {

// A worker that cannot run at all (no device, bad config): its exit code and one-line message.
class WorkerFatal : public std::runtime_error {
 public:
  WorkerFatal(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

struct SupervisorOptions {
  std::vector<std::string> worker_args;  // after the worker command: "worker", CONFIG, flags
  // CUDA_VISIBLE_DEVICES of each worker, one worker each; "" leaves the variable as it is.
  // Workers with equal values share a GPU: they are never busy at the same time.
  std::vector<std::string> devices;
  double case_timeout_s = 900;  // a busy worker silent this long is killed (hung case)
  // A starting worker (launch floor, calibration) has its own limit, not --case-timeout's: the
  // longer of this and case_timeout_s.
  double start_timeout_s = 900;
  // Per worker, the program started in its place (`kvbench ab`: one build each), before
  // worker_args; empty: kvbench's own worker command for every one.
  std::vector<std::string> programs;
  // Per entry of the cases given to supervise(), the worker that must run it, the list dealt in
  // order (`kvbench ab`: each case to one build, then the other); empty: any free worker.
  std::vector<std::size_t> worker_of;
};

// What became of one case.
struct CaseOutcome {
  std::size_t index = 0;
  std::size_t worker = 0;
  std::string csv_line;            // the worker's row; empty when `failure` says why there is none
  std::string failure;             // "worker killed by signal 9 (out of memory?)", ...
  std::vector<double> samples_us;  // the row's timing samples, when the setup asked for them
};

struct SupervisorEvents {
  std::function<void(std::size_t worker, const std::string& device_json)> ready;
  std::function<void(const CaseOutcome&)> done;
  std::function<void(std::size_t worker, const std::string& note)> note;  // `note <text>` lines
};

// Runs `cases` on the workers. Returns 0 when every case has an outcome, or the number of the
// signal (SIGINT, SIGTERM) that interrupted it; then the workers are gone and the case in flight
// has no outcome. Throws WorkerFatal when a worker reports `fatal` or exits before `ready`.
int supervise(const std::vector<std::size_t>& cases, const SupervisorOptions& options,
              const SupervisorEvents& events);

// The command that starts a worker, before its arguments ("worker", CONFIG, flags): kvbench's own
// executable (/proc/self/exe) unless this sets another, as a program hosting the library does
// (include/kvbench/host.h). Empty: kvbench's own again. KVBENCH_WORKER, a stand-in for tests,
// takes precedence over both.
void set_worker_command(std::vector<std::string> command);

// Catches SIGTERM, and SIGINT unless it is ignored (a background job of a non-interactive
// shell): the first one makes supervise() return, a second one ends the process at once.
void install_interrupt_handlers();

}  // namespace kvbench::cli
