// `dgtune export --format bundle`: every kernel dgt::Gemm (and dgt::GroupedGemm) can load for a device's tuned problem
// families, compiled
// through the cubin cache and written as a kernel bundle (jit/bundle.hpp) that a serving deployment warms up from
// without NVRTC.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/tuning_db_reader.hpp"
#include "problem/kernel_config.hpp"

namespace dgt {

/// The kernels of a bundle for one device of a DB.
struct BundleSpecs {
  size_t families = 0;            ///< problem families with a winner of the device (what Gemm::warmup_tuned warms)
  std::vector<KernelSpec> specs;  ///< distinct by KernelSpec::key(), in first-seen order
  /// Grouped families (layout, G, N, K, scale mode) with a winner dgt::GroupedGemm can run.
  size_t grouped_families = 0;
  /// The grouped kernels dgt::GroupedGemm may load for them: every stored winner of those families whose config the
  /// grouped rules and the resource model accept (any M_sum or expected_m resolves to one of them by the ladder), and
  /// the default rule's configs (space/grouped_defaults.hpp) of each tuned key; distinct (spec, layout), first seen
  /// first.
  std::vector<std::pair<KernelSpec, GroupKind>> grouped;
};

/// Every kernel spec dgt::Gemm may load for the tuned families of device `device_id` of `db` running kernel hash
/// `kernel_hash`: per family (the problems of TuningDbReader::export_rows, grouped as Gemm::warmup_tuned groups them),
/// loader/warm_specs.hpp's any_loader_kernel_specs at the default M ladder plus the tuned M: the winners, the ladder
/// and nearest picks between them (also where cuBLASLt runs: its kernel is loaded beside it), and the default config
/// where no winner is legal, under either protocol preference; and the grouped kernels (BundleSpecs::grouped). Reads
/// the DB; no GPU, no compile.
BundleSpecs bundle_specs(const TuningDbReader& db, int64_t device_id, const std::string& kernel_hash);

/// What `dgtune export --format bundle` is asked.
struct BundleExportOptions {
  std::string db_path;    ///< an existing tuning DB (opened read-only)
  std::string device;     ///< row id or hardware key; empty: the DB's only device with winners
  std::string out_dir;    ///< the bundle directory (eval/bundle_writer.hpp's rule for an existing one)
  std::string cache_dir;  ///< cubin cache; empty: $DGTUNE_CACHE_DIR, else the per-user default (core/paths.hpp)
  int jobs = 0;           ///< NVRTC threads; 0: all cores
};

/// What an export did.
struct BundleExportReport {
  std::string device_name, hw_key;
  size_t families = 0, specs = 0, cubins = 0;
  size_t grouped_families = 0, grouped_specs = 0;  ///< BundleSpecs' grouped families and kernels
  uint64_t bytes = 0;   ///< cubin bytes written
  double seconds = 0;   ///< wall time, compiles included
};

/// Checks the output rule (nothing is compiled when it fails), reads the device's winners, compiles every kernel of
/// bundle_specs() on `jobs` threads through the cubin cache (compile_ahead; cached kernels are not recompiled) and
/// writes the bundle (write_bundle). Throws Error(kUsage) for a bad device or output directory, Error(kSqlite) for a
/// DB that cannot be read, Error(kNvrtc) naming the config when a kernel does not compile (nothing is written),
/// Error(kIo) when the cache or bundle cannot be written.
BundleExportReport export_bundle(const BundleExportOptions& o);

}  // namespace dgt
