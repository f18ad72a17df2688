#include "eval/bundle_export.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>
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
#include "loader/grouped_choice.hpp"
#include "loader/shape_key.hpp"
#include "loader/warm_specs.hpp"
#include "space/grouped_defaults.hpp"
#include "space/grouped_rules.hpp"

namespace dgt {

BundleSpecs bundle_specs(const TuningDbReader& db, int64_t device_id, const std::string& kernel_hash) {
  BundleSpecs out;
  std::unordered_set<ShapeKey, ShapeKeyHash> families;
  std::unordered_set<std::string> seen;
  std::set<std::tuple<int, int, int64_t, int64_t, std::string>> grouped_families;
  std::set<std::string> grouped_seen;
  auto add_grouped = [&](const KernelConfig& c, const Problem& keyed) {
    const KernelSpec spec = KernelSpec::of(c, keyed);
    if (!grouped_rule_violation(c).empty() || !evaluate_resources(spec).ok()) return;
    if (grouped_seen.insert(spec.key() + "_" + to_string(keyed.group_kind)).second)
      out.grouped.emplace_back(spec, keyed.group_kind);
  };
  for (const ExportRow& row : db.export_rows(device_id)) {
    if (row.trial.problem.is_grouped()) {
      // A grouped family: every winner of it (the ladder may pick any), and the default configs of each tuned key.
      const Problem& q = row.trial.problem;
      const std::optional<GroupedGemmProblem> key = grouped_key_of(q);
      if (!key) continue;  // a grouped problem dgt::GroupedGemm does not run (fast accumulation)
      if (!grouped_families.emplace(int(q.group_kind), q.groups, q.n, q.k, to_string(q.scale)).second) continue;
      for (const EnvironmentWinner& w : db.environment_winners(device_id, q)) {
        const std::optional<GroupedGemmProblem> wkey = grouped_key_of(w.problem);
        if (!wkey) continue;
        try {
          add_grouped(KernelConfig::parse_key(w.config_key), w.problem);
        } catch (const Error&) {
          // a key format this dgtune does not read: the loader skips it too
        }
        for (const KernelConfig& c : grouped_default_configs(grouped_problem_of(*wkey))) add_grouped(c, w.problem);
      }
      continue;
    }
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
  out.grouped_families = grouped_families.size();
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
  r.grouped_families = bs.grouped_families;
  r.grouped_specs = bs.grouped.size();

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
  std::vector<std::future<jit::CompiledKernel>> grouped_futures = compile_ahead_grouped(cubins, bs.grouped, pool);

  jit::BundleManifest m = jit::expected_bundle_header();
  m.dgtune_version = DGTUNE_VERSION;
  m.device_name = r.device_name;
  m.hw_key = r.hw_key;
  std::map<std::string, std::string> files;
  // Every future is waited for before an error leaves: the pool's tasks reference `cubins`.
  auto wait_all = [&] {
    for (auto& f : futures)
      if (f.valid()) f.wait();
    for (auto& f : grouped_futures)
      if (f.valid()) f.wait();
  };
  auto get = [&](std::future<jit::CompiledKernel>& f, const std::string& what) {
    try {
      return f.get();
    } catch (const Error& e) {
      wait_all();
      DGT_THROW(e.kind(), "kernel {} of the bundle: {}", what, e.message());
    }
  };
  const size_t total = unique.size() + bs.grouped.size();
  for (size_t i = 0; i < total; ++i) {
    const bool grouped = i >= unique.size();
    const size_t gi = i - unique.size();
    jit::CompiledKernel k = grouped ? get(grouped_futures[gi], bs.grouped[gi].first.key() + " (grouped " +
                                                                   to_string(bs.grouped[gi].second) + ")")
                                    : get(futures[i], unique[i].key());
    jit::BundleCubin c;
    if (grouped) {
      const auto& [spec, kind] = bs.grouped[gi];
      // What the grouped kernel's lookup computes (KernelCache::get_grouped through jit::CodeLookup).
      c.key = cubins.key_of(jit::generate_grouped_gemm(spec, kind));
      c.compiled_key = spec.compiled_key() + "_" + to_string(kind);
      c.configs = {spec.key()};
    } else {
      c.key = cubins.key_of(jit::generate_gemm(unique[i]));  // what the loader's lookup computes (jit::CodeLookup)
      c.compiled_key = unique[i].compiled_key();
      c.configs = configs_of.at(c.compiled_key);
      std::sort(c.configs.begin(), c.configs.end());
    }
    if (files.count(c.key)) {
      // Grouped specs that differ in run-time fields only (compiled_key) share a cubin: one entry lists both.
      for (jit::BundleCubin& e : m.cubins)
        if (e.key == c.key) e.configs.insert(e.configs.end(), c.configs.begin(), c.configs.end());
      continue;
    }
    c.file = c.key + ".cubin";
    c.bytes = k.cubin.size();
    c.fnv = hex16(fnv1a64(k.cubin));
    c.lowered_name = k.lowered_name;
    c.registers = k.registers, c.spill_bytes = k.spill_bytes, c.stack_bytes = k.stack_bytes;
    r.bytes += c.bytes;
    files.emplace(c.key, std::move(k.cubin));
    m.cubins.push_back(std::move(c));
  }
  for (jit::BundleCubin& e : m.cubins) std::sort(e.configs.begin(), e.configs.end());
  std::sort(m.cubins.begin(), m.cubins.end(),
            [](const jit::BundleCubin& a, const jit::BundleCubin& b) { return a.key < b.key; });
  r.cubins = m.cubins.size();
  write_bundle(o.out_dir, m, files, "--out");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dgt
