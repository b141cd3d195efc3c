#include "runtime/flush_study.hpp"

#include <algorithm>

#include "runtime/copy_kernel.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/l2flush.hpp"
#include "runtime/timer.hpp"

namespace kvbench {

std::vector<FlushStudyRow> flush_study(const DeviceDetails& d,
                                       const std::vector<std::size_t>& sizes,
                                       const RunSettings& base) {
  std::vector<FlushStudyRow> rows;
  const Stream stream;
  const cudaStream_t s = stream.get();
  const int sms = d.sm_count;
  RunSettings one = base;
  one.launches_per_sample = 1;  // one launch per window everywhere, as in cold mode

  for (std::size_t requested : sizes) {
    const std::size_t bytes = std::max<std::size_t>(16, requested / 16 * 16);
    // rotate: enough src/dst pairs that together they span at least 2x L2, so each launch finds
    // its own buffers evicted by the others (plus one, so a pair is never reused back to back).
    const int sets = static_cast<int>((2 * d.l2_bytes + 2 * bytes - 1) / (2 * bytes)) + 1;
    std::vector<DeviceBuffer> src, dst;
    for (int i = 0; i < sets; ++i) {
      src.emplace_back(bytes);
      dst.emplace_back(bytes);
      KVB_CUDA_CHECK(cudaMemsetAsync(src.back().get(), 0x5A, bytes, s));
      KVB_CUDA_CHECK(cudaMemsetAsync(dst.back().get(), 0, bytes, s));
    }
    const auto copy = [&](int i) {
      return [&, i](cudaStream_t st) {
        return launch_copy16(src[static_cast<std::size_t>(i)].get(),
                             dst[static_cast<std::size_t>(i)].get(), bytes, sms, st);
      };
    };
    const auto add = [&](const std::string& method, int n_sets, const Measurement& m, bool copies) {
      FlushStudyRow r;
      r.bytes = bytes;
      r.method = method;
      r.buffer_sets = n_sets;
      r.stats = m.stats;
      r.gbps = copies && m.stats.median_us > 0
                   ? 2.0 * static_cast<double>(bytes) / m.stats.median_us / 1e3
                   : 0;
      rows.push_back(r);
    };

    RunSettings hot = one;
    hot.mode = TimingMode::hot;
    add("hot", 1, measure(copy(0), s, hot), true);

    RunSettings cold = one;
    cold.mode = TimingMode::cold;
    cold.l2_flush = L2Flush::memset;
    add("memset", 1, measure(copy(0), s, cold), true);
    cold.l2_flush = L2Flush::read;
    add("read", 1, measure(copy(0), s, cold), true);

    int next = 0;
    const Launch rotating = [&](cudaStream_t st) {
      const cudaError_t err = copy(next)(st);
      next = (next + 1) % sets;
      return err;
    };
    add("rotate", sets, measure(rotating, s, hot), true);

    // What each flush costs by itself (not part of any timed window above).
    const L2Flusher flusher(d.l2_bytes, sms);
    for (L2Flush f : all_values<L2Flush>()) {
      const Launch flush_only = [&flusher, f](cudaStream_t st) {
        flusher.flush(f, st);
        return cudaSuccess;
      };
      add(std::string(to_string(f)) + "_only", 1, measure(flush_only, s, hot), false);
    }
  }
  return rows;
}

}  // namespace kvbench
