#include "plugin/loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>
#include <utility>

#include "core/text.hpp"
#include "plugin/sha256.hpp"

namespace kvbench::plugin {
namespace {

// Plugins are shared objects of at most this size; a larger file is refused before it is read.
constexpr std::uint64_t kMaxPluginBytes = std::uint64_t{1} << 30;

// How long a plugin's load and kvbench_plugin_init may take in the probe below.
constexpr int kProbeSeconds = 30;

// plugin_text's limit (loader.hpp).
constexpr std::size_t kMaxPluginText = 300;

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw PluginError(path + ": " + what);
}

// The file's bytes, from a regular file only (a FIFO or device would block or never end).
// `what` names the file in errors: "plugin" (a shared object) or "variant source".
std::string read_plugin_file(const std::string& path, const std::string& what = "plugin") {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) refuse(path, "cannot open " + what + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(path, what == "plugin" ? "not a regular file (a plugin is a shared object, .so)"
                                  : "not a regular file (a " + what + " is a file)");
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxPluginBytes) {
    ::close(fd);
    refuse(path, "larger than 1 GiB; not a " + what);
  }
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      refuse(path, "cannot read " + what);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return bytes;
}

bool is_elf_shared_object(const std::string& bytes) {
  // e_ident: 0x7f 'E' 'L' 'F'; e_type (offset 16, little endian on the hosts kvbench runs on):
  // 3 = ET_DYN.
  return bytes.size() >= 18 &&
         bytes.compare(0, 4,
                       "\x7f"
                       "ELF") == 0 &&
         static_cast<unsigned char>(bytes[16]) == 3 && bytes[17] == 0;
}

// What kvb_host's callbacks fill while one plugin's init runs.
struct Registration {
  std::string path;
  const Known* known;
  std::vector<PluginVariant>* variants;  // every plugin's so far (names must stay unique)
  std::vector<std::string> added;
  std::string error;  // the first refusal, or the plugin's own fail() message
};

std::int32_t add_variant(void* context, const kvb_variant* v) {
  auto& r = *static_cast<Registration*>(context);
  if (!r.error.empty()) return 1;
  if (v == nullptr || v->name == nullptr) {
    r.error = "add_variant: a variant without a name";
    return 1;
  }
  const std::string name = v->name;
  if (!valid_variant_name(name)) {
    r.error = "variant '" + plugin_text(v->name) + "': a name is 1 to 32 of [a-z0-9_]";
    return 1;
  }
  const std::vector<std::int32_t>& ops = r.known->ops;
  if (std::find(ops.begin(), ops.end(), v->op) == ops.end()) {
    std::string knows;
    for (std::size_t i = 0; i < ops.size(); ++i)
      knows += (i == 0 ? "" : i + 1 == ops.size() ? " and " : ", ") + std::to_string(ops[i]);
    r.error = "variant '" + name + "': unknown operation " + std::to_string(v->op) +
              " (ABI version " + std::to_string(KVBENCH_ABI_VERSION) + " knows " + knows + ")";
    return 1;
  }
  if (v->launch == nullptr) {
    r.error = "variant '" + name + "': no launch function";
    return 1;
  }
  if (std::find(r.known->variants.begin(), r.known->variants.end(), name) !=
      r.known->variants.end()) {
    r.error = "variant '" + name + "' clashes with kvbench's own variant of that name";
    return 1;
  }
  // One name may name a variant of each operation, all from one plugin (as kvbench's own
  // `optimized` is a variant of every operation).
  for (const PluginVariant& other : *r.variants)
    if (other.name == name && (other.plugin != r.path || other.op == v->op)) {
      r.error = "variant '" + name + "' clashes with the one " +
                (other.plugin == r.path ? std::string("it registered already")
                                        : "registered by " + other.plugin);
      return 1;
    }
  r.variants->push_back({name, plugin_text(v->why), v->op, v->supports, v->launch, r.path});
  r.added.push_back(name);
  return 0;
}

void fail(void* context, const char* message) {
  auto& r = *static_cast<Registration*>(context);
  if (r.error.empty()) r.error = message ? plugin_text(message) : "init failed";
  if (r.error.empty()) r.error = "init failed";
}

// The name of signal `s` ("SIGSEGV"), or its number.
std::string signal_name(int s) {
  const char* abbrev = sigabbrev_np(s);
  return abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(s);
}

// Loads the plugin and runs its kvbench_plugin_init in a child process first, so that a plugin
// whose constructors or init crash, end the process (an exit() there would end kvbench with the
// plugin's status, 0 included), throw or hang is refused naming what happened, and kvbench goes
// on to its one-line error. What the child prints is dropped; the parent's own load below
// reports every other refusal (the loader's, a missing symbol, a version, a fail()).
// While it lives, what is written to stdout goes to stderr: a plugin printing as it loads or in
// its init would otherwise put its text first in `list --format csv` or in a worker's protocol.
class StdoutToStderr {
 public:
  StdoutToStderr() : saved_((std::fflush(stdout), ::dup(STDOUT_FILENO))) {
    if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  ~StdoutToStderr() {
    std::fflush(stdout);  // the plugin's buffered text, to stderr still
    if (saved_ < 0) return;
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
  }
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_;
};

// While it lives a plugin may change directory; after, the process is back where it was, so a
// relative -o, config or baseline named before the plugin loaded means the same file after.
class KeepDirectory {
 public:
  KeepDirectory() : dir_(::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
  ~KeepDirectory() {
    if (dir_ < 0) return;
    const int ignored = ::fchdir(dir_);
    (void)ignored;
    ::close(dir_);
  }
  KeepDirectory(const KeepDirectory&) = delete;
  KeepDirectory& operator=(const KeepDirectory&) = delete;

 private:
  int dir_;
};

// While it lives a plugin may block signals or take them over; after, the signal mask and the
// dispositions kvbench relies on (SIGINT and SIGTERM end a run cleanly, SIGPIPE is ignored,
// SIGCHLD reaps workers) are back as they were.
class KeepSignals {
 public:
  KeepSignals() {
    ::sigprocmask(SIG_SETMASK, nullptr, &mask_);
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      ::sigaction(kSignals[i], nullptr, &actions_[i]);
  }
  ~KeepSignals() {
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      ::sigaction(kSignals[i], &actions_[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &mask_, nullptr);
  }
  KeepSignals(const KeepSignals&) = delete;
  KeepSignals& operator=(const KeepSignals&) = delete;

 private:
  static constexpr std::array<int, 4> kSignals{SIGINT, SIGTERM, SIGPIPE, SIGCHLD};
  sigset_t mask_{};
  std::array<struct sigaction, 4> actions_{};
};

// The probe child's verdict pipe, for its terminate handler.
int g_probe_verdict_fd = -1;

[[noreturn]] void probe_terminated() {
  const char verdict = 't';
  while (::write(g_probe_verdict_fd, &verdict, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}

// An exception thrown by a plugin built against the shared C++ runtime never reaches this
// binary's catch: kvbench links its runtime statically, with an unwinder of its own, so the
// plugin's runtime finds no handler and calls its terminate handler, which would abort. In the
// probe child both runtimes' handlers report the throw instead.
void report_throws_as_such() {
  std::set_terminate(probe_terminated);
  if (void* shared = ::dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD)) {
    using Handler = void (*)();
    using SetTerminate = Handler (*)(Handler);
    if (void* symbol = ::dlsym(shared, "_ZSt13set_terminatePFvvE")) {
      SetTerminate set;
      std::memcpy(&set, &symbol, sizeof set);
      set(probe_terminated);
    }
  }
}

// A child process and a pipe from it: `pid` 0 in the child, whose stdout and stderr go to
// /dev/null. std::runtime_error ("pipe: ...", "fork: ...") when either cannot be made.
struct Child {
  pid_t pid;
  int read_fd, write_fd;
};

Child fork_with_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
  } else {
    ::close(fds[1]);
  }
  return {pid, fds[0], fds[1]};
}

// Closes the read end, kills the child first when asked, and waits for it: its wait status.
int reap(const Child& child, bool kill_first) {
  ::close(child.read_fd);
  if (kill_first) ::kill(child.pid, SIGKILL);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// The probe child: loads the plugin and runs its init, then writes one verdict byte ('y': it
// returned or was refused in a way the parent's load names; 't': init threw) and ends.
[[noreturn]] void probe_child(const std::string& open_path, const std::string& path,
                              const Known& known, int fd) {
  char verdict = 'y';
  if (void* handle = ::dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    const auto* version =
        static_cast<const std::uint32_t*>(::dlsym(handle, "kvbench_plugin_abi_version"));
    void* init_symbol = ::dlsym(handle, "kvbench_plugin_init");
    if (version && *version == KVBENCH_ABI_VERSION && init_symbol) {
      kvb_plugin_init_fn init;
      std::memcpy(&init, &init_symbol, sizeof init);
      std::vector<PluginVariant> variants;
      Registration r{path, &known, &variants, {}, {}};
      const kvb_host host{KVBENCH_ABI_VERSION, &r, add_variant, fail};
      g_probe_verdict_fd = fd;
      report_throws_as_such();
      try {
        init(KVBENCH_ABI_VERSION, &host);
      } catch (...) {
        verdict = 't';
      }
    }
  }
  while (::write(fd, &verdict, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);  // no atexit handlers or destructors of the plugin's: the probe is done
}

// The probe's verdict byte, 0 when the child ended without one; timed_out when none came in time.
char read_verdict(int fd, bool& timed_out) {
  char verdict = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(kProbeSeconds);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          end - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      return 0;
    }
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) timed_out = true;
    if (n > 0) {
      const ssize_t got = ::read(fd, &verdict, 1);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) verdict = 0;  // EOF: the child ended without a verdict
    }
    return verdict;
  }
}

void probe(const std::string& open_path, const std::string& path, const Known& known) {
  Child child{};
  try {
    child = fork_with_pipe();
  } catch (const std::runtime_error& e) {
    refuse(path, e.what());
  }
  if (child.pid == 0) probe_child(open_path, path, known, child.write_fd);
  bool timed_out = false;
  const char verdict = read_verdict(child.read_fd, timed_out);
  const int status = reap(child, timed_out);
  if (timed_out)
    refuse(path, "did not finish loading and kvbench_plugin_init within " +
                     std::to_string(kProbeSeconds) + " s (hung?)");
  if (verdict == 't')
    refuse(path,
           "kvbench_plugin_init threw a C++ exception (a plugin reports a failure with "
           "host->fail and a nonzero return)");
  if (verdict == 'y') return;
  if (WIFSIGNALED(status))
    refuse(path, "crashed while loading or in kvbench_plugin_init (" +
                     signal_name(WTERMSIG(status)) + ")");
  refuse(path, "ended the process while loading or in kvbench_plugin_init (exit status " +
                   std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                   "; a plugin returns from kvbench_plugin_init, it never exits)");
}

// The asking child: one line per answer, 'A' and its text or 'E' and an exception's message.
[[noreturn]] void answer_all(std::size_t n, const std::function<std::string(std::size_t)>& answer,
                             int fd) {
  for (std::size_t i = 0; i < n; ++i) {
    std::string line;
    try {
      line = 'A' + answer(i);
    } catch (const std::exception& e) {
      line = 'E' + std::string(e.what());
    }
    std::replace(line.begin(), line.end(), '\n', ' ');
    line += '\n';
    for (std::size_t done = 0; done < line.size();) {
      const ssize_t w = ::write(fd, line.data() + done, line.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ::_exit(1);
      done += static_cast<std::size_t>(w);
    }
  }
  ::_exit(0);  // no atexit handlers or destructors: the answers are all the child was for
}

// Up to n lines from fd, each within `seconds` of the one before; timed_out when one did not come.
std::vector<std::string> read_answers(int fd, std::size_t n, int seconds, bool& timed_out) {
  std::vector<std::string> answers;
  std::string pending;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (answers.size() < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          end - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fd, POLLIN, 0};
    const int ready = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      timed_out = true;
      break;
    }
    char buf[4096];
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the child ended
    pending.append(buf, static_cast<std::size_t>(got));
    for (std::size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      answers.push_back(pending.substr(0, eol));
      pending.erase(0, eol + 1);
      end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    }
  }
  return answers;
}

}  // namespace

std::vector<std::string> ask_in_child(std::size_t n,
                                      const std::function<std::string(std::size_t)>& answer,
                                      int seconds) {
  const Child child = fork_with_pipe();
  if (child.pid == 0) answer_all(n, answer, child.write_fd);
  bool timed_out = false;
  const std::vector<std::string> answers = read_answers(child.read_fd, n, seconds, timed_out);
  const int status = reap(child, timed_out);
  std::vector<std::string> texts;
  for (const std::string& a : answers) {
    if (a.empty() || a[0] != 'A') throw std::runtime_error(a.empty() ? "" : a.substr(1));
    texts.push_back(a.substr(1));
  }
  if (texts.size() == n) return texts;
  const std::size_t at = texts.size();
  if (timed_out)
    throw AskEnded(at, "did not answer within " + std::to_string(seconds) + " s (hung?)");
  if (WIFSIGNALED(status)) throw AskEnded(at, "crashed (" + signal_name(WTERMSIG(status)) + ")");
  throw AskEnded(at, "ended the process (exit status " +
                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
}

bool plain_utf8(const std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_char(s, i);
    if (n == 0 || (n == 1 && (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7F)))
      return false;
    i += n;
  }
  return true;
}

std::string plugin_text(const char* text) {
  if (text == nullptr) return "";
  const std::string_view s(text, ::strnlen(text, 1 << 20));
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_char(s, i);
    std::string_view piece = n ? s.substr(i, n) : "?";
    if (n == 1 && (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7F)) piece = " ";
    if (out.size() + piece.size() > kMaxPluginText) {
      out += "...";
      break;
    }
    out += piece;
    i += n ? n : 1;
  }
  return out;
}

bool valid_variant_name(const std::string& name) {
  return !name.empty() && name.size() <= 32 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Plugins::Plugins(Plugins&& o) noexcept
    : info_(std::move(o.info_)),
      variants_(std::move(o.variants_)),
      handles_(std::exchange(o.handles_, {})) {}

Plugins& Plugins::operator=(Plugins&& o) noexcept {
  std::swap(info_, o.info_);
  std::swap(variants_, o.variants_);
  std::swap(handles_, o.handles_);
  return *this;
}

// Plugins stay mapped until exit: a CUDA module a plugin loaded may be torn down by the runtime
// at exit, after this object, and unmapping its code first would crash there.
Plugins::~Plugins() = default;

const PluginVariant* Plugins::find(const std::string& name) const {
  for (const PluginVariant& v : variants_)
    if (v.name == name) return &v;
  return nullptr;
}

namespace {
bool g_plugin_loaded = false;
}  // namespace

bool plugin_loaded() { return g_plugin_loaded; }

void Plugins::load(const std::vector<std::string>& paths, const Known& known) {
  for (const std::string& path : paths) {
    for (const PluginInfo& seen : info_)
      if (seen.path == path) refuse(path, "given twice");
    if (!plain_utf8(path))
      refuse(plugin_text(path.c_str()),
             "a plugin path is UTF-8 without control characters (the sidecar records it); "
             "rename or link the file");
    const std::string bytes = read_plugin_file(path);
    if (!is_elf_shared_object(bytes)) refuse(path, "not an ELF shared object (.so)");
    // A path without '/' would make dlopen search the library path: load the file given.
    const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
    probe(open_path, path, known);
    const StdoutToStderr shield;  // what the plugin prints while it loads is no output of ours
    const KeepDirectory here;     // nor does its chdir move our relative paths
    const KeepSignals signals;    // nor do its signal mask and handlers stay
    g_plugin_loaded = true;
    void* handle = ::dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      refuse(path, std::string("the dynamic loader refused it: ") + (why ? why : "unknown"));
    }
    handles_.push_back(handle);
    const auto* version =
        static_cast<const std::uint32_t*>(::dlsym(handle, "kvbench_plugin_abi_version"));
    if (version == nullptr)
      refuse(path, "no symbol kvbench_plugin_abi_version (KVBENCH_PLUGIN_EXPORT_ABI defines it)");
    if (*version != KVBENCH_ABI_VERSION)
      refuse(path, "built for kvbench plugin ABI version " + std::to_string(*version) +
                       "; this kvbench speaks version " + std::to_string(KVBENCH_ABI_VERSION));
    void* init_symbol = ::dlsym(handle, "kvbench_plugin_init");
    if (init_symbol == nullptr) refuse(path, "no symbol kvbench_plugin_init");
    kvb_plugin_init_fn init;
    std::memcpy(&init, &init_symbol, sizeof init);  // object pointer -> function pointer

    Registration r{path, &known, &variants_, {}, {}};
    const kvb_host host{KVBENCH_ABI_VERSION, &r, add_variant, fail};
    std::int32_t status = 0;
    const pid_t self = ::getpid();
    try {
      status = init(KVBENCH_ABI_VERSION, &host);
    } catch (...) {  // the probe saw it return; a plugin that throws only now is refused too
      refuse(path, "kvbench_plugin_init threw a C++ exception");
    }
    // A plugin that forked in its init returns twice: the copy would go on as a second kvbench
    // (a second list, a second run writing the same files). It ends here, silently.
    if (::getpid() != self) ::_exit(0);
    if (!r.error.empty())
      refuse(path, "kvbench_plugin_init (ABI version " + std::to_string(KVBENCH_ABI_VERSION) +
                       "): " + r.error);
    if (status != 0)
      refuse(path, "kvbench_plugin_init returned " + std::to_string(status) + " (ABI version " +
                       std::to_string(KVBENCH_ABI_VERSION) + ")");
    if (r.added.empty()) refuse(path, "kvbench_plugin_init registered no variant");
    info_.push_back({path, static_cast<std::uint64_t>(bytes.size()), sha256_hex(bytes), r.added});
  }
}

void Plugins::add_in_process(const kvb_variant& variant, const std::string& source,
                             const Known& known) {
  if (source.empty())
    throw PluginError("variant '" + std::string(variant.name ? variant.name : "") +
                      "': no source file (the file that defines it)");
  Registration r{source, &known, &variants_, {}, {}};
  add_variant(&r, &variant);
  if (!r.error.empty()) refuse(source, r.error);
  for (PluginInfo& i : info_)
    if (i.path == source && i.in_process) {
      i.variants.push_back(r.added.front());
      return;
    }
  try {
    const std::string bytes = read_plugin_file(source, "variant source");
    info_.push_back(
        {source, static_cast<std::uint64_t>(bytes.size()), sha256_hex(bytes), r.added, true});
  } catch (const PluginError&) {
    variants_.pop_back();  // not registered: its source cannot be recorded
    throw;
  }
}

Plugins load_plugins(const std::vector<std::string>& paths, const Known& known) {
  Plugins out;
  out.load(paths, known);
  return out;
}

}  // namespace kvbench::plugin
