// NVRTC compilation of kernel sources embedded in the binary.
#pragma once

#include <string>
#include <vector>

#include "jit/embedded_sources.hpp"

namespace dgt::jit {

/// Result of one NVRTC compilation. Resource numbers come from ptxas's verbose report in the log.
struct CompiledKernel {
  std::string cubin;         ///< sm_90a machine code
  std::string lowered_name;  ///< mangled name of the kernel (from the name expression), "" for extern "C" modules
  std::string log;           ///< NVRTC + ptxas log
  int registers = 0;         ///< per thread at entry (ptxas "Used N registers")
  int spill_bytes = 0;       ///< spill stores + spill loads
  int stack_bytes = 0;       ///< stack frame
  double compile_ms = 0;
  int ffma_interleaved = 0;  ///< FFMAs the post-compile edit changed (jit/ffma_interleave.hpp); 0 when it was off
};

/// Post-compile edits of the machine code; an edit on by default is part of the kernel hash (kernel_hash.hpp).
struct CompileOptions {
  /// DeepGEMM's FFMA interleaving (jit/ffma_interleave.hpp): control bits only, outputs bitwise unchanged. Off: on
  /// the H200 it made the block-scaled grouped kernels 1.6% slower and the large dense ones 0-3% slower, and a few
  /// small-M ones 2-7% faster (results/h200/ffma-interleave-2026-12-04.md); tools/kernel_ab --ffma-interleave-new
  /// measures it again.
  bool ffma_interleave = false;
  /// The FFMA scale-reuse edit (jit/ffma_interleave.hpp): the reuse flag of Rb on every FFMA of a run that shares it
  /// with the next. Off: on the H200 it made the block-scaled kernels 3-5% slower (dense 0.969, grouped 0.947;
  /// results/h200/block-profile-2026-12-04.md); tools/kernel_ab --ffma-reuse-new measures it again.
  bool ffma_scale_reuse = false;
  /// Whether any edit is on (the cubin cache holds unedited code only).
  bool any() const { return ffma_interleave || ffma_scale_reuse; }
};

/// Name and version of the default post-compile edits, for the kernel hash ("" when none is on by default).
std::string default_sass_edits();

/// The NVRTC options every compile uses (part of the cache key and the kernel hash).
const std::vector<std::string>& nvrtc_options();

/// NVRTC version as "major.minor".
std::string nvrtc_version_string();

/// Compiles `source` (a translation unit that #includes kernels by their path under kernels/,
/// e.g. "gemm/fp8_gemm.cuh"; every embedded source is offered as an in-memory header) for sm_90a.
/// When `name_expression` is non-empty it is registered with nvrtcAddNameExpression and its lowered
/// name returned. Throws Error(kNvrtc) with the full log when compilation fails or when ptxas
/// serialized the WGMMAs (serialized_wgmma_warning).
/// The cubin gets the default post-compile edits (CompileOptions{}: none today).
CompiledKernel compile(const std::string& source, const std::string& program_name, const std::string& name_expression);
/// compile() with `headers` offered instead of the embedded sources (e.g. the kernels/ tree of another revision, for
/// an A/B timing of a kernel change in one process: tools/kernel_ab) and the post-compile edits of `options`. Same
/// NVRTC options, errors and report.
CompiledKernel compile_with_sources(const std::string& source, const std::string& program_name,
                                    const std::string& name_expression, const std::vector<EmbeddedSource>& headers,
                                    const CompileOptions& options = {});

/// The first line of `log` in which ptxas reports that it serialized wgmma.mma_async instructions
/// (warnings C7514 / C7515, e.g. "wgmma.mma_async instructions are serialized due to ..."), or "" when
/// there is none. A serialized mainloop runs its WGMMAs one at a time (and usually spills), so
/// compile() treats such a warning as a failure.
std::string serialized_wgmma_warning(const std::string& log);

/// Parses ptxas -v output ("Used N registers", "N bytes stack frame, N bytes spill stores, N bytes
/// spill loads") for `function` (mangled name; empty = first function reported) into `out`.
void parse_ptxas_report(const std::string& log, const std::string& function, CompiledKernel& out);

}  // namespace dgt::jit
