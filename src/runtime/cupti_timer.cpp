#include "runtime/cupti_timer.hpp"

#include <cuda_runtime_api.h>
#include <cupti_activity.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "runtime/cuda_check.hpp"

namespace kvbench {
namespace {

// The functions of libcupti the timer calls, resolved with dlsym.
struct Api {
  CUptiResult(CUPTIAPI* get_version)(uint32_t*) = nullptr;
  CUptiResult(CUPTIAPI* register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                            CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult(CUPTIAPI* enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult(CUPTIAPI* flush_all)(uint32_t) = nullptr;
  CUptiResult(CUPTIAPI* next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult(CUPTIAPI* dropped)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult(CUPTIAPI* result_string)(CUptiResult, const char**) = nullptr;
};

Api api;
std::mutex records_mutex;             // the callbacks may run on a thread of CUPTI's
std::vector<KernelRecord> collected;  // guarded by records_mutex
std::size_t dropped_total = 0;        // guarded by records_mutex
constexpr std::size_t kBufferBytes = std::size_t{4} << 20;
constexpr std::size_t kBufferAlign = 8;  // ACTIVITY_RECORD_ALIGNMENT

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  std::vector<KernelRecord> got;
  CUpti_Activity* r = nullptr;
  while (buffer && api.next_record(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && r->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    // Every kernel record since CUPTI 11.0 starts with CUpti_ActivityKernel5's fields; later
    // versions only append.
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel5*>(r);
    got.push_back(KernelRecord{k->start, k->end, k->graphId});
  }
  size_t lost = 0;
  if (api.dropped(ctx, stream, &lost) != CUPTI_SUCCESS) lost = 0;
  std::free(buffer);
  const std::lock_guard<std::mutex> lock(records_mutex);
  collected.insert(collected.end(), got.begin(), got.end());
  dropped_total += lost;
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  if (api.result_string && api.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

// Loads libcupti and resolves the API; "" on success, else why not.
std::string load(std::string& library) {
  const int major = CUDART_VERSION / 1000;
  std::string tried;
  void* handle = nullptr;
  for (const std::string& path :
       cupti_candidates(std::getenv("KVBENCH_CUPTI"), std::getenv("CUDA_HOME"), major)) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      library = path;
      break;
    }
    const char* e = dlerror();
    if (tried.empty()) tried = e ? e : path + ": cannot be loaded";
  }
  if (!handle) {
    const char* env = std::getenv("KVBENCH_CUPTI");
    return env && *env ? "KVBENCH_CUPTI=" + std::string(env) + ": " + tried
                       : "libcupti not found (" + tried + "; set KVBENCH_CUPTI to its file)";
  }
  const auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
    return fn != nullptr;
  };
  for (const auto& [ok, name] :
       {std::pair{sym(api.get_version, "cuptiGetVersion"), "cuptiGetVersion"},
        {sym(api.register_callbacks, "cuptiActivityRegisterCallbacks"),
         "cuptiActivityRegisterCallbacks"},
        {sym(api.enable, "cuptiActivityEnable"), "cuptiActivityEnable"},
        {sym(api.flush_all, "cuptiActivityFlushAll"), "cuptiActivityFlushAll"},
        {sym(api.next_record, "cuptiActivityGetNextRecord"), "cuptiActivityGetNextRecord"},
        {sym(api.dropped, "cuptiActivityGetNumDroppedRecords"),
         "cuptiActivityGetNumDroppedRecords"},
        {sym(api.result_string, "cuptiGetResultString"), "cuptiGetResultString"}})
    if (!ok) return library + ": no symbol " + name;
  return "";
}

std::string& reason() {
  static std::string r;
  return r;
}

}  // namespace

std::vector<std::string> cupti_candidates(const char* kvbench_cupti, const char* cuda_home,
                                          int cuda_major) {
  if (kvbench_cupti && *kvbench_cupti) return {kvbench_cupti};
  const std::string soname = "libcupti.so." + std::to_string(cuda_major);
  const std::string home = cuda_home && *cuda_home ? cuda_home : "/usr/local/cuda";
  std::vector<std::string> out = {soname, "libcupti.so"};
  for (const char* dir : {"/lib64/", "/extras/CUPTI/lib64/"})
    for (const std::string& name : {soname, std::string("libcupti.so")})
      out.push_back(home + dir + name);
  return out;
}

std::string cupti_fallback_message(const std::string& why) {
  return "kvbench: warning: the cupti timer is unavailable (" + why + "); timing with CUDA events";
}

CuptiTimer* CuptiTimer::get() {
  static CuptiTimer* timer = [] {
    auto* t = new (std::nothrow) CuptiTimer();
    std::string why = t ? load(t->library_) : "out of host memory";
    if (why.empty()) {
      CUptiResult r = api.get_version(&t->version_);
      if (r == CUPTI_SUCCESS) r = api.register_callbacks(buffer_requested, buffer_completed);
      if (r != CUPTI_SUCCESS) why = t->library_ + ": " + result_text(r);
    }
    if (why.empty()) return t;
    reason() = why;
    std::fprintf(stderr, "%s\n", cupti_fallback_message(why).c_str());
    delete t;
    return static_cast<CuptiTimer*>(nullptr);
  }();
  return timer;
}

std::string CuptiTimer::unavailable_reason() { return reason(); }

void CuptiTimer::start() {
  if (!enabled_) {
    const CUptiResult r = api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS)
      throw CudaError(cudaErrorUnknown, "cupti timer: cuptiActivityEnable: " + result_text(r));
    enabled_ = true;
  }
  take();  // nothing from before
}

void CuptiTimer::stop() { take(); }

std::vector<KernelRecord> CuptiTimer::take() {
  api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<KernelRecord> out;
  const std::lock_guard<std::mutex> lock(records_mutex);
  out.swap(collected);
  return out;
}

std::size_t CuptiTimer::dropped_by_cupti() const {
  const std::lock_guard<std::mutex> lock(records_mutex);
  return dropped_total;
}

}  // namespace kvbench
