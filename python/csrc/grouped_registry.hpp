// One dgt::GroupedGemm per (device, grouped problem key) for the grouped torch ops, made on the key's first call.
// Making one compiles or loads a kernel, which must not happen inside CUDA-graph capture: a first call on a capturing
// stream is refused instead (the usual warm-up call before torch.cuda.graph makes it).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "dgtune/grouped_gemm.hpp"

namespace dgt::torch_op {

/// The GroupedGemm of `key` on `device`, made on first use with the tuning DB, protocol, bundle and cubin cache of the
/// last dgtune_torch_configure (dgtune.load): its config is chosen then, so a later dgtune.load changes the choice of
/// keys not used yet only. Objects are never destroyed (graphs may hold their launches). Throws
/// dgt::Error as the GroupedGemm constructor does, and dgt::Error(kUsage) for a first use while `stream` is capturing,
/// naming `op` and the key.
const GroupedGemm& grouped_for(int device, const GroupedGemmProblem& key, cudaStream_t stream, const std::string& op);

/// The GroupedGemm an op call already made for `key` on `device`, or nullptr when none has (never makes one: a query
/// of what the op runs must not compile or load a kernel).
const GroupedGemm* grouped_find(int device, const GroupedGemmProblem& key);

}  // namespace dgt::torch_op
