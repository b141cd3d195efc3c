#include "cli/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <sstream>

#include "cli/exit_codes.hpp"

namespace kvbench::cli {
namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe[2] = {-1, -1};
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) {
  g_signal = sig;
  const auto byte = static_cast<unsigned char>(sig);
  const ssize_t ignored = write(g_signal_pipe[1], &byte, 1);
  (void)ignored;
}

struct Worker {
  std::string device;  // CUDA_VISIBLE_DEVICES; "" inherits
  enum class State { dead, starting, idle, busy, leaving } state = State::dead;
  pid_t pid = -1;
  int to = -1, from = -1;  // its stdin, its stdout
  std::size_t case_index = 0;
  std::vector<double> samples_us;  // of the case in flight, from its `samples` line
  Clock::time_point since;         // when it started, took its case, or became idle
  std::string pending_text;        // bytes after the last complete line
  int restarts = 0;                // workers started in this slot
};

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find kvbench's own executable (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

std::vector<std::string>& host_worker_command() {
  static std::vector<std::string> command;
  return command;
}

// The worker command: KVBENCH_WORKER (a shell command, for tests), the host's
// (set_worker_command), or kvbench itself.
std::vector<std::string> worker_command(const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  if (const char* stand_in = std::getenv("KVBENCH_WORKER"); stand_in && *stand_in) {
    argv = {"/bin/sh", "-c", std::string("exec ") + stand_in + " \"$@\"", "kvbench-worker"};
  } else if (!host_worker_command().empty()) {
    argv = host_worker_command();
  } else {
    argv = {self_exe()};
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// A worker replacing one that died skips the launch floor: the first one measured it.
void spawn(Worker& w, std::vector<std::string> command) {
  if (w.restarts++ > 0) command.push_back("--skip-floor");
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot create a pipe for a worker: ") +
                             std::strerror(errno));
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(std::string("cannot start a worker: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    setpgid(0, 0);                     // the terminal's Ctrl-C reaches the parent only
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a parent killed outright takes its workers along
    std::signal(SIGPIPE, SIG_DFL);
    if (!w.device.empty()) setenv("CUDA_VISIBLE_DEVICES", w.device.c_str(), 1);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "kvbench: cannot run worker %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  w.pid = pid;
  w.to = in[1];
  w.from = out[0];
  w.state = Worker::State::starting;
  w.since = Clock::now();
  w.pending_text.clear();
}

// Waits for the worker's exit (killing its process group if it lingers) and closes its pipes.
int reap(Worker& w, bool kill_now) {
  if (w.to >= 0) close(w.to);
  if (w.from >= 0) close(w.from);
  w.to = w.from = -1;
  int status = 0;
  if (kill_now) kill(-w.pid, SIGKILL);
  for (int i = 0; i < 500; ++i) {  // 5 s to exit after its stdin closes
    const pid_t r = waitpid(w.pid, &status, WNOHANG);
    if (r == w.pid || (r < 0 && errno != EINTR)) break;
    if (i == 499) {
      kill(-w.pid, SIGKILL);
      waitpid(w.pid, &status, 0);
      break;
    }
    usleep(10000);
  }
  kill(-w.pid, SIGKILL);  // anything the worker left behind in its group
  w.pid = -1;
  w.state = Worker::State::dead;
  return status;
}

std::string death_reason(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "worker killed by signal " + std::to_string(sig) +
           (sig == SIGKILL ? " (out of memory?)" : " (" + std::string(strsignal(sig)) + ")");
  }
  return "worker exited with status " + std::to_string(WEXITSTATUS(status)) +
         " before reporting the case";
}

}  // namespace

void set_worker_command(std::vector<std::string> command) {
  host_worker_command() = std::move(command);
}

void install_interrupt_handlers() {
  if (g_signal_pipe[0] < 0 && pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::runtime_error(std::string("cannot create the signal pipe: ") + std::strerror(errno));
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second signal takes its default action: the end, at once
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction old {};
  sigaction(SIGINT, nullptr, &old);
  if (old.sa_handler != SIG_IGN) sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a dead worker's stdin: write() fails, its exit is handled
}

namespace {

// One run of cases over the workers: deals cases, reads the workers' lines, ends the workers that
// die, hang or leave. Each step is one method; run() loops over them.
class Supervisor {
 public:
  using State = Worker::State;

  Supervisor(const std::vector<std::size_t>& cases, const SupervisorOptions& options,
             const SupervisorEvents& events)
      : options_(options),
        events_(events),
        command_(worker_command(options.worker_args)),
        workers_(options.devices.size()),
        timeout_(options.case_timeout_s),
        start_s_(std::max(options.start_timeout_s, options.case_timeout_s)),
        start_timeout_(start_s_) {
    for (std::size_t i = 0; i < workers_.size(); ++i) workers_[i].device = options.devices[i];
    for (std::size_t k = 0; k < cases.size(); ++k)
      pending_.push_back({cases[k], options.worker_of.empty() ? kAnyWorker : options.worker_of[k]});
  }

  int run() {
    try {
      while (true) {
        if (g_signal) {
          kill_all();
          return g_signal;
        }
        for (Worker& w : workers_)
          if (w.state == State::dead && !pending_.empty() && !gpu_taken(w)) spawn(w, command(w));
        deal();
        if (finished()) return 0;
        wait_and_read();
        end_timed_out();
      }
    } catch (...) {
      kill_all();
      throw;
    }
  }

 private:
  Clock::duration limit(const Worker& w) const {
    return std::chrono::duration_cast<Clock::duration>(w.state == State::starting ? start_timeout_
                                                                                  : timeout_);
  }

  void kill_all() {
    for (Worker& w : workers_)
      if (w.state != State::dead) reap(w, true);
  }

  // The workers of one GPU take turns: while one of them starts (it times the launch floor and
  // may calibrate) or runs a case, the others on that GPU wait.
  bool gpu_taken(const Worker& self) const {
    for (const Worker& w : workers_)
      if (&w != &self && w.device == self.device &&
          (w.state == State::busy || w.state == State::starting))
        return true;
    return false;
  }

  std::vector<std::string> command(const Worker& w) const {
    if (options_.programs.empty()) return command_;
    std::vector<std::string> argv = {
        options_.programs[static_cast<std::size_t>(&w - &workers_[0])]};
    argv.insert(argv.end(), options_.worker_args.begin(), options_.worker_args.end());
    return argv;
  }

  // Each case to the worker idle the longest, on a GPU no other worker is using; a case bound to
  // a worker waits for that one, and the cases after it wait too (the order is the point).
  void deal() {
    while (!pending_.empty()) {
      Worker* next = nullptr;
      const std::size_t bound = pending_.front().worker;
      for (Worker& w : workers_)
        if (w.state == State::idle && !gpu_taken(w) && (!next || w.since < next->since) &&
            (bound == kAnyWorker || &w == &workers_[bound]))
          next = &w;
      if (!next) break;
      next->case_index = pending_.front().case_index;
      next->samples_us.clear();
      pending_.pop_front();
      const std::string request = "case " + std::to_string(next->case_index) + "\n";
      const ssize_t ignored = write(next->to, request.data(), request.size());  // EPIPE: dies below
      (void)ignored;
      next->state = State::busy;
      next->since = Clock::now();
    }
  }

  // True, with the workers gone, once no case is left to deal or in flight.
  bool finished() {
    bool any_busy = false;
    for (const Worker& w : workers_) any_busy = any_busy || w.state == State::busy;
    if (!pending_.empty() || any_busy) return false;
    for (Worker& w : workers_)
      if (w.state != State::dead) reap(w, w.state == State::starting);
    return true;
  }

  // Polls the signal pipe and the workers' stdout until something arrives or the nearest case
  // timeout passes; hands every complete line to on_line().
  void wait_and_read() {
    std::vector<pollfd> fds = {{g_signal_pipe[0], POLLIN, 0}};
    std::vector<std::size_t> owner = {workers_.size()};
    int wait_ms = -1;
    const auto now = Clock::now();
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const Worker& w = workers_[i];
      if (w.state == State::dead) continue;
      fds.push_back({w.from, POLLIN, 0});
      owner.push_back(i);
      if (w.state == State::busy || w.state == State::starting) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(w.since + limit(w) - now).count();
        const int ms =
            static_cast<int>(std::max<long long>(0, std::min<long long>(left + 1, 1 << 30)));
        wait_ms = wait_ms < 0 ? ms : std::min(wait_ms, ms);
      }
    }
    if (poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR)
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    if (fds[0].revents & POLLIN) {
      unsigned char drain[16];
      while (read(g_signal_pipe[0], drain, sizeof drain) > 0) {
      }
    }
    for (std::size_t k = 1; k < fds.size(); ++k)
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) read_from(owner[k]);
  }

  void read_from(std::size_t i) {
    Worker& w = workers_[i];
    char buf[65536];
    const ssize_t n = read(w.from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
      ended(i, "");
      return;
    }
    w.pending_text.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl; (nl = w.pending_text.find('\n', start)) != std::string::npos;
         start = nl + 1)
      on_line(i, w.pending_text.substr(start, nl - start));
    w.pending_text.erase(0, start);
  }

  void end_timed_out() {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const Worker& w = workers_[i];
      if ((w.state == State::busy || w.state == State::starting) && now - w.since > limit(w)) {
        char why[128];
        if (w.state == State::starting)
          std::snprintf(why, sizeof why,
                        "not ready after %g s (launch floor and calibration; hung?)", start_s_);
        else
          std::snprintf(why, sizeof why, "worker timed out after %g s (hung?)",
                        options_.case_timeout_s);
        ended(i, why);
      }
    }
  }

  // The end of a worker: its case, if it had one, fails with the reason.
  void ended(std::size_t i, const std::string& why_if_busy) {
    Worker& w = workers_[i];
    const State was = w.state;
    const std::size_t index = w.case_index;
    const int status = reap(w, !why_if_busy.empty());
    if (was == State::starting) {
      kill_all();
      throw WorkerFatal(kDevice, "worker" + (w.device.empty() ? "" : " for device " + w.device) +
                                     (why_if_busy.empty()
                                          ? " ended before reporting ready: " + death_reason(status)
                                          : " did not report ready: " + why_if_busy));
    }
    if (was == State::busy)
      events_.done({index, i, "", why_if_busy.empty() ? death_reason(status) : why_if_busy});
  }

  void on_line(std::size_t i, const std::string& line) {
    Worker& w = workers_[i];
    const auto space = line.find(' ');
    const std::string word = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (word == "ready" && w.state == State::starting) {
      w.state = State::idle;
      w.since = Clock::now();
      events_.ready(i, rest);
    } else if (word == "samples" && w.state == State::busy) {
      on_samples(i, rest);
    } else if (word == "row" && w.state == State::busy) {
      on_row(i, line, rest);
    } else if (word == "note") {
      if (events_.note) events_.note(i, rest);
    } else if (word == "bye") {
      // The worker takes no more cases; one dealt to it after its last row goes back in line.
      if (w.state == State::busy)
        pending_.push_front({w.case_index, options_.worker_of.empty()
                                               ? kAnyWorker
                                               : static_cast<std::size_t>(&w - &workers_[0])});
      w.state = State::leaving;
    } else if (word == "fatal") {
      const auto sp = rest.find(' ');
      // A worker ends the run for bad input (3) or its device (4); any other code is a worker
      // gone wrong, reported as a device failure rather than as a verdict (1, 2) or unknown.
      const int code = std::atoi(rest.substr(0, sp).c_str());
      kill_all();
      throw WorkerFatal(code == kBadInput ? kBadInput : kDevice,
                        sp == std::string::npos ? rest : rest.substr(sp + 1));
    } else {
      std::fprintf(stderr, "kvbench: worker: %s\n", line.c_str());
    }
  }

  // `row N <csv line>` from a busy worker: its case's row.
  void on_row(std::size_t i, const std::string& line, const std::string& rest) {
    Worker& w = workers_[i];
    const auto sp = rest.find(' ');
    if (sp == std::string::npos || rest.substr(0, sp) != std::to_string(w.case_index))
      throw WorkerFatal(kFailed, "worker sent a row for another case than " +
                                     std::to_string(w.case_index) + ": '" + line + "'");
    w.state = State::idle;
    w.since = Clock::now();
    events_.done({w.case_index, i, rest.substr(sp + 1), "", std::move(w.samples_us)});
  }

  // `samples N <µs> ...` from a busy worker, before its row: non-negative finite numbers.
  void on_samples(std::size_t i, const std::string& rest) {
    Worker& w = workers_[i];
    std::istringstream in(rest);
    std::size_t index = 0;
    if (!(in >> index) || index != w.case_index)
      throw WorkerFatal(
          kFailed, "worker sent samples for another case than " + std::to_string(w.case_index));
    w.samples_us.clear();
    for (std::string word; in >> word;) {
      char* end = nullptr;
      const double v = std::strtod(word.c_str(), &end);
      if (*end != 0 || !std::isfinite(v) || v < 0)
        throw WorkerFatal(kFailed, "worker sent a sample that is not a time in µs: '" + word +
                                       "' (case " + std::to_string(index) + ")");
      w.samples_us.push_back(v);
    }
  }

  const SupervisorOptions& options_;
  const SupervisorEvents& events_;
  const std::vector<std::string> command_;
  std::vector<Worker> workers_;
  struct Job {
    std::size_t case_index, worker;
  };
  static constexpr std::size_t kAnyWorker = static_cast<std::size_t>(-1);
  std::deque<Job> pending_;
  const std::chrono::duration<double> timeout_;
  // A starting worker (launch floor, calibration) has its own limit: the longer of the two.
  const double start_s_;
  const std::chrono::duration<double> start_timeout_;
};

}  // namespace

int supervise(const std::vector<std::size_t>& cases, const SupervisorOptions& options,
              const SupervisorEvents& events) {
  return Supervisor(cases, options, events).run();
}

}  // namespace kvbench::cli
