// Helpers every op's stages share: canaried outputs, upload, the bitwise check, saved tensors.
#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/compare.hpp"
#include "core/mismatch_report.hpp"
#include "core/npy.hpp"
#include "core/operation.hpp"
#include "runtime/case_sets.hpp"
#include "runtime/cuda_check.hpp"

namespace kvbench::stages {

Bytes host_bytes(std::int64_t elems, DType t) {
  return Bytes(static_cast<std::size_t>(elems) * size_of(t));
}

std::size_t SetLayout::add(std::size_t bytes) {
  const std::size_t at = bytes_;
  bytes_ += (bytes + kAlign - 1) / kAlign * kAlign;
  return at;
}

void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes > 0) KVB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
}

Bytes launch_and_compare(const Launch& launch, const void* out, const Bytes& expected,
                         DType out_dtype, cudaStream_t stream, const ValidationOptions& options,
                         const Locate& locate, Row& row) {
  KVB_CUDA_CHECK(launch(stream));
  Bytes actual(expected.size());
  KVB_CUDA_CHECK(
      cudaMemcpyAsync(actual.data(), out, actual.size(), cudaMemcpyDeviceToHost, stream));
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto elems = static_cast<std::int64_t>(expected.size() / size_of(out_dtype));
  const CompareResult cmp = compare_bitwise(expected.data(), actual.data(), elems,
                                            size_of(out_dtype), options.max_report);
  row.mismatches = cmp.count;
  if (cmp.count > 0) {
    row.status = Status::incorrect;
    row.reason = report_mismatches(cmp, elems, out_dtype, locate);
  }
  return actual;
}

SavedTensor tensor(const std::string& name, DType t, const Bytes& b) {
  return {name, std::string(to_string(t)), npy_descr(t), b.data(), b.size(), size_of(t)};
}

SavedTensor i64_tensor(const std::string& name, const std::vector<std::int64_t>& v) {
  return {name, "i64", "<i8", v.data(), v.size() * 8, 8};
}

SavedTensor f32_tensor(const std::string& name, const std::vector<float>& v) {
  return {name, "f32", "<f4", v.data(), v.size() * 4, 4};
}

void save_tensors(const ValidationOptions& o, const Case& c, int set, const std::string& geometry,
                  const std::vector<SavedTensor>& tensors) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(o.save_tensors_dir) / o.case_tag;
  if (set > 0) dir /= "set" + std::to_string(set);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create directory: " + ec.message());
  for (const auto& t : tensors)
    write_npy((dir / (t.name + "." + t.dtype + ".npy")).string(), t.descr,
              {static_cast<std::int64_t>(t.bytes / t.elem_size)}, t.data, t.bytes);
  std::ofstream meta(dir / "case.txt");
  meta << describe(c) << "\n" << geometry << "\n";
  if (!meta) throw std::runtime_error((dir / "case.txt").string() + ": cannot write");
}

bool should_save(const ValidationOptions& o, const Row& row) {
  return !o.save_tensors_dir.empty() && (o.save_all || row.status != Status::passed);
}

void parallel_for(std::size_t n, const std::function<void(std::size_t)>& body) {
  const std::size_t workers =
      std::min<std::size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < n;) {
        try {
          body(i);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
          next = n;  // stop handing out work
        }
      }
    });
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

std::string set_prefix(int set, int sets) {
  return set == 0 ? std::string()
                  : "set " + std::to_string(set) + " of " + std::to_string(sets) + ": ";
}

bool admit_variant(const Case& c, Row& row) {
  std::string why = variant_refusal(c);
  if (why.empty()) return true;
  row.status = Status::not_supported;
  row.reason = std::move(why);
  return false;
}

}  // namespace kvbench::stages
