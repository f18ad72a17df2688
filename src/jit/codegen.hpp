// Code generation: the translation unit and name expression that instantiate one kernel.
#pragma once

#include <string>

#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"

namespace dgt {
struct ResourceReport;
}

namespace dgt::jit {

/// Bumped whenever generated code changes meaning; part of the kernel hash.
constexpr int kCodegenVersion = 5;  // 3: kScaleMode template parameter; 4: kOutType, kBias, kAct; 5: kSplitMode (u32)

struct GeneratedKernel {
  std::string source;           ///< .cu text for NVRTC
  std::string name_expression;  ///< the kernel template instance, for nvrtcAddNameExpression
  std::string program_name;     ///< e.g. "fp8_gemm_128x128x128_s4_..."
};

/// The FP8 GEMM instance for `spec` (template arguments in kernels/gemm/fp8_gemm.cuh order). With `trace`,
/// the source defines DGT_TRACE (kernels/gemm/trace.cuh: per-CTA phase timestamps in the device array
/// "dgt_trace", for `dgtune trace`) and the program name ends in "_trace"; the cubin cache keys on the source,
/// so traced and plain cubins never mix. The launch size the source embeds (DGT_HOST_SMEM_BYTES) is the resource
/// report's: `resources` is evaluate_resources(spec), computed by the caller (space/resource_model.hpp
/// EvaluatedSpec); the overload without it evaluates the spec itself.
GeneratedKernel generate_gemm(const KernelSpec& spec, const ResourceReport& resources, bool trace = false);
GeneratedKernel generate_gemm(const KernelSpec& spec, bool trace = false);

/// The grouped (MoE) instance of the same kernel for `spec` (kernels/gemm/grouped_scheduler.cuh): the dense
/// name expression with kGroupKind = 1 (contiguous) or 2 (masked) appended, a source that says which (so its cubin
/// never shares a cache entry with the dense one) and a program name ending in "_contiguous" / "_masked". `spec` must
/// pass space/grouped_rules.hpp grouped_rule_violation (the kernel's static_asserts G1-G4 otherwise fail the compile).
GeneratedKernel generate_grouped_gemm(const KernelSpec& spec, GroupKind kind, const ResourceReport& resources);
GeneratedKernel generate_grouped_gemm(const KernelSpec& spec, GroupKind kind);

/// The utility module (fill, flush, clock probe, reference GEMM, compare); extern "C" names.
GeneratedKernel generate_util_module();

}  // namespace dgt::jit
