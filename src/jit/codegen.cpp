#include "jit/codegen.hpp"

#include "core/error.hpp"
#include "space/resource_model.hpp"

#include "jit/fault_injection.hpp"

#include <fmt/format.h>

namespace dgt::jit {

GeneratedKernel generate_gemm(const KernelSpec& spec, bool trace) {
  return generate_gemm(spec, evaluate_resources(spec), trace);
}

GeneratedKernel generate_gemm(const KernelSpec& spec, const ResourceReport& res, bool trace) {
  const KernelConfig& c = spec.config;
  GeneratedKernel g;
  g.name_expression = fmt::format(
      "dgt::gemm::fp8_gemm_kernel<{}u, {}u, {}u, {}u, {}u, {}u, {}u, {}u, {}, {}u, {}, {}u, {}u, {}, {}u, {}u, {}u, {}u, {}u, {}, {}u>",
      c.block_m, c.block_n, c.block_k, c.num_stages, c.num_math_wg, c.swizzle, c.cluster_m, c.cluster_n,
      c.raster == Raster::kAlongM ? "true" : "false", c.group, spec.accum == Accum::kFast ? "true" : "false",
      // Swap AB: the kernel's A is the problem's B (and the other way round).
      fp8_type_code(c.swap_ab ? spec.b : spec.a), fp8_type_code(c.swap_ab ? spec.a : spec.b), c.epilogue == Epilogue::kTma ? "true" : "false",
      c.split_k > 1 ? (c.split_cluster ? c.split_k : 1) : 0,  // kSplitMode: 0 none, 1 workspace, S cluster split
      c.mainloop == Mainloop::kPp   ? 4
      : c.mainloop == Mainloop::k2o ? 3
      : c.mainloop == Mainloop::k2g ? 2
                                    : 1,
      c.promote_every, scale_mode_code(spec.scale), out_type_code(spec.d), spec.bias == Bias::kBF16 ? "true" : "false",
      act_code(spec.act));
  // Swap AB: the last template arguments, kGroupKind 0 and kSwapAB (defaulted, so other kernels' name expressions stay
  // as they were).
  if (c.swap_ab) {
    g.name_expression.pop_back();
    g.name_expression += ", 0u, true>";
  }
  g.source = fmt::format("// dgtune codegen v{} for {}\n#include \"gemm/fp8_gemm.cuh\"\n", kCodegenVersion,
                         spec.compiled_key());
  // The launch size comes from the host's resource model: the kernel checks its own layout against it.
  if (res.ok())
    g.source = fmt::format("#define DGT_HOST_SMEM_BYTES {}u\n", res.smem.total) + g.source;
  if (const int fault = test_fault_of(spec)) g.source = fmt::format("#define DGT_TEST_FAULT {}\n", fault) + g.source;
  g.program_name = "fp8_gemm_" + spec.compiled_key() + ".cu";
  if (trace) {
    g.source = "#define DGT_TRACE 1\n" + g.source;
    g.program_name = "fp8_gemm_" + spec.compiled_key() + "_trace.cu";
  }
  return g;
}

GeneratedKernel generate_grouped_gemm(const KernelSpec& spec, GroupKind kind) {
  return generate_grouped_gemm(spec, kind, evaluate_resources(spec));
}

GeneratedKernel generate_grouped_gemm(const KernelSpec& spec, GroupKind kind, const ResourceReport& res) {
  // G6 (src/space/grouped_rules.cpp) refuses swap AB before here; the name expression below could not carry both.
  if (spec.config.swap_ab)
    DGT_THROW(ErrorKind::kInvalid, "{}: grouped kernels do not swap A and B (rule G6)", spec.key());
  GeneratedKernel g = generate_gemm(spec, res, false);
  // The last template argument, kGroupKind (defaulted to 0 for the dense kernels, whose name expression stays as it was).
  g.name_expression.pop_back();
  g.name_expression += fmt::format(", {}u>", static_cast<int>(kind));
  g.source = fmt::format("// grouped: {}\n", to_string(kind)) + g.source;
  g.program_name = fmt::format("fp8_gemm_{}_{}.cu", spec.compiled_key(), to_string(kind));
  return g;
}

GeneratedKernel generate_util_module() {
  GeneratedKernel g;
  g.source = fmt::format("// dgtune codegen v{}: utility module\n#include \"util/util_module.cuh\"\n", kCodegenVersion);
  g.program_name = "dgt_util_module.cu";
  return g;
}

}  // namespace dgt::jit
