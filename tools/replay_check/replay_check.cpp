// dgtune_replay_check: in a fresh process, every problem of a tuning DB whose dgt::Gemm runs a stored cuBLASLt
// algorithm (GemmChoice::backend "cublaslt", "stored ...") runs exactly the algorithm the sweep stored, and its output
// is bitwise the output of cuBLASLt called the way the sweep timed it (bench/cublaslt_baseline.hpp: the heuristic's
// list, the entry whose 64 bytes are the stored ones, on the same buffers).
//
// For each such problem: the algorithm bytes dgt::Gemm's entry holds are compared with the stored ones; the output of
// Gemm::run on seeded random operands is checked against the FP64-accumulated reference (bench/verify) and compared
// byte for byte with the sweep path's output. Where the heuristic no longer returns the stored algorithm (another
// cuBLASLt), the direct call is the stored algorithm through cublasLtMatmulAlgoCheck instead, and the row says so.
// Exit status 0 when every checked row has the same algorithm and bitwise equal outputs, 1 otherwise, 2 on a usage or
// setup error. Output: a table and, with --out, a JSON document.
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <vector>

#include "bench/cublaslt_baseline.hpp"
#include "bench/problem_data.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "db/tuning_db_reader.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/cublaslt_gemm.hpp"
#include "launch/util_kernels.hpp"
#include "loader/gemm_impl.hpp"

namespace dgt {
namespace {

std::vector<uint8_t> read_output(const ProblemData& d, cudaStream_t s) {
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  std::vector<uint8_t> out(d.output_bytes());
  DGT_CHECK_CUDA(cudaMemcpy(out.data(), d.output(), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

int run(const std::string& db_path, const std::string& out_path) {
  const DeviceInfo dev = open_device(0);
  TuningDbReader db(db_path);
  const std::optional<int64_t> device_id = db.find_hardware(dev.hardware());
  if (!device_id) DGT_THROW(ErrorKind::kUsage, "{} has no trials for this device ({})", db_path, dev.name);
  std::vector<Problem> problems;
  for (const ExportRow& r : db.export_rows(*device_id))
    if (std::find(problems.begin(), problems.end(), r.trial.problem) == problems.end())
      problems.push_back(r.trial.problem);

  GemmOptions o;
  o.db_path = db_path;
  Gemm gemm(o);
  jit::CubinCache cache(usable_cache_dir(""));
  UtilKernels util(cache, dev.sm_count);
  CublasLtBaseline lt;
  CublasLtHandle direct_handle;  // the stored algorithm's own call, where the heuristic no longer lists it
  cudaStream_t stream = nullptr;
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  nlohmann::json rows = nlohmann::json::array();
  size_t checked = 0, failed = 0, kernel = 0, heuristic = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    const ShapeKey key = shape_key_of(p);
    const GemmEntry& e = GemmAccess::entry(gemm, key);
    if (!e.lt) {
      ++kernel;
      continue;
    }
    if (e.choice.cublaslt_algo.rfind("stored ", 0) != 0) {
      ++heuristic;
      continue;
    }
    ++checked;
    // The stored algorithms of p itself (every environment and protocol): the entry's bytes must be one of them.
    const CublasLtAlgoBytes ran = algo_bytes(e.lt->algo());
    const std::vector<uint8_t> ran_v(ran.begin(), ran.end());
    bool same_algo = false;
    for (const StoredCublasLtAlgo& a : db.cublaslt_winners(*device_id, p))
      same_algo |= a.problem == p && a.algo_data == ran_v;

    ProblemData data(p, util, 20261203 + i, stream);
    const jit::GemmOperands ops = data.operands();
    GemmRunOptions ro = run_options_of(p);
    ro.bias = ops.bias, ro.scale_d = ops.scale_d;
    data.poison_output(stream);
    gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, stream, ro);
    const Verification v = data.verify(stream);
    const std::vector<uint8_t> through_loader = read_output(data, stream);

    // cuBLASLt the way the sweep timed it: the heuristic's list on the same buffers, the entry with the stored bytes.
    CublasLtPlan plan(lt, data);
    int index = -1;
    for (int j = 0; j < plan.returned() && index < 0; ++j)
      if (plan.algo(j) == ran) index = j;
    data.poison_output(stream);
    std::string direct_how = "sweep path (heuristic list entry " + std::to_string(index) + ")";
    if (index >= 0) {
      if (plan.launch(index, stream) != 0) direct_how = "sweep path refused the launch";
    } else {
      std::string why;
      auto g = CublasLtGemm::checked(direct_handle.get(), p, e.lt->algo(), why);
      direct_how = g ? "stored algorithm (not in the heuristic's list)" : "cannot run: " + why;
      DeviceBuffer ws(std::max<size_t>(g ? g->workspace_bytes() : 0, 16));
      if (g) {
        g->bind_workspace(ws.get(), ws.bytes());
        g->launch(ops, stream);
      }
    }
    const std::vector<uint8_t> direct = read_output(data, stream);
    const bool bitwise = through_loader == direct;
    const bool ok = same_algo && bitwise && v.ok;
    failed += !ok;
    rows.push_back({{"problem", p.key()},
                    {"algo", e.choice.cublaslt_algo},
                    {"same_algo_as_stored", same_algo},
                    {"verify_ok", v.ok},
                    {"max_rel_err", v.max_rel_err},
                    {"direct_call", direct_how},
                    {"bitwise_equal", bitwise}});
    fmt::print("{:<64} {} algo {} verify {} bitwise {}  ({})\n", p.label(), ok ? "OK  " : "FAIL",
               same_algo ? "same" : "DIFFERENT", v.ok ? "ok" : "FAILED", bitwise ? "equal" : "DIFFERENT", direct_how);
  }
  fmt::print("{} problems: {} run a stored cuBLASLt algorithm ({} failed), {} cuBLASLt's heuristic, {} dgtune's kernel\n",
             problems.size(), checked, failed, heuristic, kernel);
  nlohmann::json doc = {{"tool", "dgtune_replay_check"}, {"device", dev.name},   {"db", db_path},
                        {"cublaslt_version", cublasLtGetVersion()},              {"problems", problems.size()},
                        {"stored_replays", checked}, {"failed", failed},       {"heuristic", heuristic},
                        {"kernel", kernel},          {"rows", rows}};
  if (!out_path.empty()) std::ofstream(out_path) << doc.dump(1) << "\n";
  DGT_CHECK_CUDA(cudaStreamDestroy(stream));
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace dgt

int main(int argc, char** argv) {
  CLI::App app{"dgtune_replay_check: stored cuBLASLt winners replay the stored algorithm, bitwise as the sweep ran it"};
  std::string db, out;
  app.add_option("--db", db, "tuning DB")->required();
  app.add_option("--out", out, "write the JSON document here");
  CLI11_PARSE(app, argc, argv);
  try {
    return dgt::run(db, out);
  } catch (const std::exception& e) {
    fmt::print(stderr, "dgtune_replay_check: {}\n", e.what());
    return 2;
  }
}
