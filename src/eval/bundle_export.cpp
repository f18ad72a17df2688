#include "eval/bundle_export.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_set>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/paths.hpp"
#include "core/thread_pool.hpp"
#include "db/device_pick.hpp"
#include "eval/bundle_writer.hpp"
#include "jit/bundle.hpp"
#include "jit/codegen.hpp"
#include "jit/cubin_cache.hpp"
#include "jit/kernel_hash.hpp"
#include "launch/kernel_cache.hpp"
#include "loader/shape_key.hpp"
#include "loader/warm_specs.hpp"

namespace dgt {

BundleSpecs bundle_specs(const TuningDbReader& db, int64_t device_id, const std::string& kernel_hash) {
  BundleSpecs out;
  std::unordered_set<ShapeKey, ShapeKeyHash> families;
  std::unordered_set<std::string> seen;
  for (const ExportRow& row : db.export_rows(device_id)) {
    // A grouped winner (schema 11) is no dense family: dgt::Gemm does not load grouped kernels (yet).
    if (row.trial.problem.is_grouped()) continue;
    // The family as Gemm::warmup_tuned groups it (ShapeKey::family: N, K, leading dimensions, types).
    const ShapeKey fk = shape_key_of(row.trial.problem).family();
    if (!families.insert(fk).second) continue;
    ShapeKey one = fk;
    one.m = 1;
    const Problem family = make_problem(one);
    const std::vector<EnvironmentWinner> candidates = db.environment_winners(device_id, family);
    for (KernelSpec& s : any_loader_kernel_specs(candidates, family, {}, kernel_hash))
      if (seen.insert(s.key()).second) out.specs.push_back(std::move(s));
  }
  out.families = families.size();
  return out;
}

BundleExportReport export_bundle(const BundleExportOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  check_bundle_output(o.out_dir, "--out");  // before the DB is read or anything compiled
  TuningDbReader db(o.db_path);
  const int64_t device_id = pick_device(db, o.device, "--device", false);
  BundleExportReport r;
  for (const DeviceRow& d : db.devices())
    if (d.id == device_id) r.device_name = d.name, r.hw_key = d.hw_key;
  const std::string kernel_hash = jit::kernel_source_hash();
  const BundleSpecs bs = bundle_specs(db, device_id, kernel_hash);
  r.families = bs.families;
  r.specs = bs.specs.size();

  // One compile per cubin: specs that share a compiled key share the code.
  std::map<std::string, std::vector<std::string>> configs_of;  // compiled key -> spec keys
  std::vector<KernelSpec> unique;
  for (const KernelSpec& s : bs.specs) {
    auto [it, fresh] = configs_of.try_emplace(s.compiled_key());
    if (fresh) unique.push_back(s);
    it->second.push_back(s.key());
  }
  jit::CubinCache cubins(usable_cache_dir(o.cache_dir));
  ThreadPool pool(o.jobs);
  std::vector<std::future<jit::CompiledKernel>> futures = compile_ahead(cubins, unique, pool);

  jit::BundleManifest m = jit::expected_bundle_header();
  m.dgtune_version = DGTUNE_VERSION;
  m.device_name = r.device_name;
  m.hw_key = r.hw_key;
  std::map<std::string, std::string> files;
  for (size_t i = 0; i < unique.size(); ++i) {
    jit::CompiledKernel k;
    try {
      k = futures[i].get();
    } catch (const Error& e) {
      for (size_t j = i + 1; j < futures.size(); ++j) futures[j].wait();  // the pool's tasks reference `cubins`
      DGT_THROW(e.kind(), "kernel {} of the bundle: {}", unique[i].key(), e.message());
    }
    jit::BundleCubin c;
    c.key = cubins.key_of(jit::generate_gemm(unique[i]));  // what the loader's lookup computes (jit::CodeLookup)
    c.compiled_key = unique[i].compiled_key();
    c.configs = configs_of.at(c.compiled_key);
    std::sort(c.configs.begin(), c.configs.end());
    c.file = c.key + ".cubin";
    c.bytes = k.cubin.size();
    c.fnv = hex16(fnv1a64(k.cubin));
    c.lowered_name = k.lowered_name;
    c.registers = k.registers, c.spill_bytes = k.spill_bytes, c.stack_bytes = k.stack_bytes;
    r.bytes += c.bytes;
    files.emplace(c.key, std::move(k.cubin));
    m.cubins.push_back(std::move(c));
  }
  std::sort(m.cubins.begin(), m.cubins.end(),
            [](const jit::BundleCubin& a, const jit::BundleCubin& b) { return a.key < b.key; });
  r.cubins = m.cubins.size();
  write_bundle(o.out_dir, m, files, "--out");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dgt
