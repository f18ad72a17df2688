// One dgt::Gemm per CUDA device for the torch op, created on the device's first call with the options last given to
// dgtune_torch_configure (python/dgtune/tuner.py load()). The op's hot path takes no lock: the Gemm of a device is
// published once through an atomic pointer; configure() replaces them all and must not race with running ops.
#pragma once

#include <atomic>
#include <cstdint>

#include "dgtune/gemm.hpp"

namespace dgt::torch_op {

/// Counters of the op on one device (beside dgt::GemmStats).
struct OpCounters {
  std::atomic<unsigned long long> calls{0};        ///< scaled_mm calls that launched
  std::atomic<unsigned long long> scale_copies{0};  ///< scales copied into dgt::Gemm's layout before a launch
};

/// The Gemm of `device` (created on first use; throws dgt::Error as the dgt::Gemm constructor does).
Gemm& gemm_for(int device);
/// The Gemm of `device` if it exists, else nullptr (stats of a device never used).
Gemm* existing_gemm(int device);
OpCounters& counters_for(int device);

/// Replaces the options of every later Gemm and destroys the existing ones (their launches must have finished).
void configure(const GemmOptions& options);
/// The options configure() last set (the grouped registry takes its cubin cache directory from them).
GemmOptions configured_options();

constexpr int kMaxDevices = 64;

}  // namespace dgt::torch_op
