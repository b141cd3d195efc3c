#include "plugin/loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "plugin/sha256.hpp"

namespace kvbench::plugin {
namespace {

// Plugins are shared objects of at most this size; a larger file is refused before it is read.
constexpr std::uint64_t kMaxPluginBytes = std::uint64_t{1} << 30;

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

const char* op_name(std::int32_t op) {
  switch (op) {
    case KVB_OP_CONCAT_MLA_K:
      return "concat_and_cast_mha_k";
    case KVB_OP_CACHE_WRITE:
      return "reshape_and_cache_flash";
    default:
      return nullptr;
  }
}

// What kvb_host's callbacks fill while one plugin's init runs.
struct Registration {
  std::string path;
  const std::vector<std::string>* taken;
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
    r.error = "variant '" + name + "': a name is 1 to 32 of [a-z0-9_]";
    return 1;
  }
  if (op_name(v->op) == nullptr) {
    r.error = "variant '" + name + "': unknown operation " + std::to_string(v->op) +
              " (ABI version " + std::to_string(KVBENCH_ABI_VERSION) + " knows 1 and 2)";
    return 1;
  }
  if (v->launch == nullptr) {
    r.error = "variant '" + name + "': no launch function";
    return 1;
  }
  if (std::find(r.taken->begin(), r.taken->end(), name) != r.taken->end()) {
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
  r.variants->push_back({name, v->why ? v->why : "", v->op, v->supports, v->launch, r.path});
  r.added.push_back(name);
  return 0;
}

void fail(void* context, const char* message) {
  auto& r = *static_cast<Registration*>(context);
  if (r.error.empty()) r.error = message ? message : "init failed";
}

}  // namespace

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

void Plugins::load(const std::vector<std::string>& paths, const std::vector<std::string>& taken) {
  for (const std::string& path : paths) {
    for (const PluginInfo& seen : info_)
      if (seen.path == path) refuse(path, "given twice");
    const std::string bytes = read_plugin_file(path);
    if (!is_elf_shared_object(bytes)) refuse(path, "not an ELF shared object (.so)");
    // A path without '/' would make dlopen search the library path: load the file given.
    const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
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

    Registration r{path, &taken, &variants_, {}, {}};
    const kvb_host host{KVBENCH_ABI_VERSION, &r, add_variant, fail};
    const std::int32_t status = init(KVBENCH_ABI_VERSION, &host);
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
                             const std::vector<std::string>& taken) {
  if (source.empty())
    throw PluginError("variant '" + std::string(variant.name ? variant.name : "") +
                      "': no source file (the file that defines it)");
  Registration r{source, &taken, &variants_, {}, {}};
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

Plugins load_plugins(const std::vector<std::string>& paths, const std::vector<std::string>& taken) {
  Plugins out;
  out.load(paths, taken);
  return out;
}

}  // namespace kvbench::plugin
