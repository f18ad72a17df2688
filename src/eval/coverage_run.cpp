#include "eval/coverage_run.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "device/device_info.hpp"
#include "dgtune/gemm.hpp"
#include "eval/coverage_tables.hpp"
#include "eval/shape_compare.hpp"
#include "problem/m_grid.hpp"

namespace dgt {

namespace {

/// The GemmRunOptions of problem p (its formats, accumulation, scale mode, output type, bias and activation) with the
/// epilogue pointers of `ops`; a pointer the problem does not take stays null, since dgt::Gemm reads a bias pointer as
/// "the problem has a bias" and refuses amax without e4m3 output.
GemmRunOptions gemm_run_options(const Problem& p, const jit::GemmOperands& ops) {
  GemmRunOptions o;
  o.a_format = p.a == DType::kE5M2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
  o.b_format = p.b == DType::kE5M2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
  o.fast_accum = p.accum == Accum::kFast;
  o.scale = static_cast<Fp8Scaling>(static_cast<int>(p.scale));  // the same values (static_assert in loader/gemm.cpp)
  o.output = p.d == DType::kF32 ? OutputType::kF32 : p.d == DType::kE4M3 ? OutputType::kE4M3 : OutputType::kBF16;
  o.bias = p.bias == Bias::kBF16 ? ops.bias : nullptr;
  o.act = p.act == Act::kRelu ? Activation::kRelu : p.act == Act::kGeluTanh ? Activation::kGeluTanh : Activation::kNone;
  if (p.d == DType::kE4M3) {
    o.scale_d = ops.scale_d;
    o.amax = ops.amax;
  }
  return o;
}

/// gemm.choose() for p: choose() reads only whether a bias pointer is set (the problem's bias field), never the
/// pointer itself, so a marker stands in before the shape's buffers exist.
GemmChoice choose(Gemm& gemm, const Problem& p) {
  static const uint16_t kBiasMarker = 0;
  jit::GemmOperands marker;
  marker.bias = &kBiasMarker;
  const GemmRunOptions o = gemm_run_options(p, marker);
  return gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd, o);
}

/// Side kSideDispatch: one gemm.run() of the shape on the measurement's buffers. After its first call (the verification
/// before timing) it allocates nothing and synchronises nothing (dgt::Gemm's contract), so the engine may capture it.
DataSide dispatch_side(Gemm& gemm) {
  return {kSideDispatch, [&gemm](const ProblemData& data, cudaStream_t stream) {
            const Problem& p = data.problem();
            const jit::GemmOperands ops = data.operands();
            gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, stream,
                     gemm_run_options(p, ops));
          }};
}

/// An error after which this process must stop timing (a lost CUDA context, a kernel still running after its
/// watchdog), as opposed to one problem's failure.
bool fatal(const Error& e) {
  return e.kind() == ErrorKind::kCuda || e.kind() == ErrorKind::kDriver || e.kind() == ErrorKind::kTimeout;
}

/// The M of the run: the caller's list, else the grid of the seed.
std::vector<int64_t> grid_ms(const CoverageRunOptions& o) {
  for (int64_t m : o.ms)
    if (m < 1) DGT_THROW(ErrorKind::kUsage, "--grid-m {}: M must be >= 1", m);
  return o.ms.empty() ? coverage_m_grid(uint64_t(o.grid_seed), o.per_octave) : o.ms;
}

/// This call's share of `all` (grid problem j, in order, goes to shard j mod count).
std::vector<GridProblem> shard_share(std::vector<GridProblem> all, const Shard& shard) {
  if (shard.whole()) return all;
  std::vector<GridProblem> mine;
  for (size_t j = 0; j < all.size(); ++j)  // round-robin, as select_shard deals the distinct problems of a file
    if (int64_t(j % size_t(shard.count)) == shard.index) mine.push_back(std::move(all[j]));
  return mine;
}

}  // namespace

std::vector<GridProblem> coverage_problems(const CoverageRunOptions& o) {
  return shard_share(grid_problems(o.shapes, grid_ms(o), o.model), o.shard);
}

std::vector<report::Table> run_coverage(const CoverageRunOptions& o) {
  o.protocol.validate();
  if (o.grid_seed < 0) DGT_THROW(ErrorKind::kUsage, "--grid-seed {} is negative", o.grid_seed);
  // Bad input is refused before the GPU is opened. grid_problems gives every distinct problem (M ignored) at every M.
  const std::vector<int64_t> ms = grid_ms(o);
  std::vector<GridProblem> all = grid_problems(o.shapes, ms, o.model);
  const size_t grid_m = ms.size(), distinct = ms.empty() ? 0 : all.size() / ms.size();
  const std::vector<GridProblem> problems = shard_share(std::move(all), o.shard);
  check_compare_db(o.db_path, o.db_flag);
  require_device(o.device);

  ShapeCompareOptions so;
  so.db_path = o.db_path;
  so.cache_dir = o.cache_dir;
  so.device = o.device;
  so.protocol = o.protocol;
  so.copy_limit = false;  // the coverage compares GEMMs; the copy limit is compare's own measurement
  ShapeComparer cmp(so);
  GemmOptions go;
  go.db_path = o.db_path;
  go.cache_dir = o.cache_dir;
  go.device = o.device;
  go.protocol = to_string(o.protocol.kind);  // the winners of the protocol measured, as `compare` chooses
  go.cublaslt = true;
  go.probe_ladder = o.probe_ladder;
  Gemm gemm(go);

  // NVRTC on all cores for the comparer's choice of every problem: the loader's rule on the same DB, so the Gemm's
  // first call per problem finds its kernel in the shared cubin cache (a config that differs compiles there).
  std::vector<ShapeEntry> entries;
  for (const GridProblem& g : problems) entries.push_back(g.entry);
  cmp.prefetch(entries);

  const std::string protocol = o.protocol.name();
  std::vector<CoverageShape> out;
  for (const GridProblem& g : problems) {
    const Problem& p = g.entry.problem;
    CoverageShape c;
    c.problem = p;
    c.model = g.model;
    c.protocol = protocol;
    c.grid_seed = o.grid_seed;
    try {
      const GemmChoice choice = choose(gemm, p);
      c.source = choice.source;
      c.backend = choice.backend;
      c.config_key = choice.config_key;
      c.cublaslt_algo = choice.cublaslt_algo;
      c.probe = choice.probe;
      spdlog::info("coverage {} ({}), {}: {} {} ({})", p.label(), g.model, protocol, c.backend, c.config_key, c.source);
      MeasureAdditions add;
      // The kernel dgt::Gemm would run with cublaslt = false (GemmChoice::config_key), built by the comparer.
      add.config = std::pair{KernelConfig::parse_key(choice.config_key), choice.source};
      add.sides.push_back(dispatch_side(gemm));
      ShapeMeasurement m = cmp.measure(g.entry, add);
      c.tuned_algo = m.tuned_algo;
      c.default_algo = m.default_algo;
      if (!m.ok())
        c.note = m.status + ": " + m.error;  // a wrong output or a failed measurement: no times, no ratios
      else if (m.rounds)
        c.result = std::move(m.rounds);
      if (m.ok() && m.tuned_algo.rfind("unsupported: ", 0) == 0)
        c.note = "cuBLASLt refuses the problem (" + m.tuned_algo.substr(13) + "): no ratio";
    } catch (const Error& e) {
      if (fatal(e)) throw;
      c.note = "error: " + e.message();
      spdlog::warn("coverage {}: {}", p.label(), e.message());
    }
    out.push_back(std::move(c));
  }
  std::string db_note;
  if (!std::filesystem::exists(o.db_path))
    db_note = fmt::format(": no tuning database at {}, dgt::Gemm runs untuned", o.db_path);
  else if (!cmp.has_winners())
    db_note = fmt::format(": {} holds no winners of this device ({})", o.db_path, cmp.device().name);
  const std::string title = fmt::format(
      "dgtune compare --m-grid {} on {} ({}, {} rounds; db {}{}; {}: {} M x {} problems{}; "
      "x = cuBLASLt-tuned us / us)",
      o.shapes_path, cmp.device().name, protocol, o.protocol.rounds, o.db_path, db_note,
      o.ms.empty() ? fmt::format("grid seed {}, {} per octave", o.grid_seed, o.per_octave) : std::string("--grid-m"),
      grid_m, distinct,
      o.shard.whole() ? std::string() : fmt::format(", shard {} ({} grid problems)", o.shard.text(), problems.size()));
  return coverage_tables(out, paired_options(o.stats), title);
}

}  // namespace dgt
