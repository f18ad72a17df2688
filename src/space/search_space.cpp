#include "space/search_space.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "space/tile_grid.hpp"

namespace dgt {

namespace {

using nlohmann::json;

const json& axis(const json& grid, const json& base, const char* key, const std::string& where) {
  if (grid.contains(key)) return grid.at(key);
  if (base.contains(key)) return base.at(key);
  DGT_THROW(ErrorKind::kUsage, "{}: search space lacks \"{}\"", where, key);
}

std::vector<int> int_list(const json& v, const char* key, const std::string& where) {
  std::vector<int> out;
  if (v.is_object()) {
    if (!v.contains("from") || !v.contains("to") || !v.contains("step") || !v["from"].is_number_integer() ||
        !v["to"].is_number_integer() || !v["step"].is_number_integer() || v["step"].get<int>() <= 0)
      DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" range must be {{\"from\": int, \"to\": int, \"step\": int > 0}}", where,
                key);
    for (int x = v["from"].get<int>(); x <= v["to"].get<int>(); x += v["step"].get<int>()) out.push_back(x);
  } else if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_number_integer())
        DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" must hold integers, found {}", where, key, e.dump());
      out.push_back(e.get<int>());
    }
  } else {
    DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" must be an array of integers or a range object", where, key);
  }
  if (out.empty()) DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" is empty", where, key);
  return out;
}

std::vector<std::string> string_list(const json& v, const char* key, const std::string& where) {
  if (!v.is_array() || v.empty()) DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" must be a non-empty array", where, key);
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string()) DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" must hold strings, found {}", where, key, e.dump());
    out.push_back(e.get<std::string>());
  }
  return out;
}

/// Stages: integers >= 1, or "max" / "max-N" (stored as 0 / -N).
std::vector<int> stage_list(const json& v, const std::string& where) {
  if (!v.is_array() || v.empty()) DGT_THROW(ErrorKind::kUsage, "{}: \"num_stages\" must be a non-empty array", where);
  std::vector<int> out;
  for (const auto& e : v) {
    if (e.is_number_integer() && e.get<int>() >= 1) {
      out.push_back(e.get<int>());
    } else if (e.is_string() && e.get<std::string>() == "max") {
      out.push_back(0);
    } else if (e.is_string() && e.get<std::string>().rfind("max-", 0) == 0) {
      const std::string n = e.get<std::string>().substr(4);
      if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || std::stoi(n) < 1)
        DGT_THROW(ErrorKind::kUsage, "{}: num_stages \"{}\" must be \"max\" or \"max-N\" with N >= 1", where,
                  e.get<std::string>());
      out.push_back(-std::stoi(n));
    } else {
      DGT_THROW(ErrorKind::kUsage, "{}: num_stages entry {} must be an integer >= 1, \"max\" or \"max-N\"", where,
                e.dump());
    }
  }
  return out;
}

constexpr const char* kAxes[] = {"block_m", "block_n", "block_k",  "num_stages",   "num_math_wg",
                                 "swizzle", "cluster", "raster",   "group",        "epilogue",
                                 "split_k", "sms",     "mainloop", "promote_every"};

void check_keys(const json& j, const std::string& where, bool top_level) {
  for (const auto& [k, _] : j.items()) {
    bool known = k == "name" || k == "comment" || (top_level && (k == "base" || k == "union"));
    for (const char* a : kAxes) known = known || k == a;
    if (!known)
      DGT_THROW(
          ErrorKind::kUsage,
          "{}: unknown key \"{}\" (axes: block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster, raster, "
          "group, epilogue, split_k, sms, mainloop, promote_every; also name, comment{})",
          where, k, top_level ? ", base, union" : "");
  }
}

SpaceGrid parse_grid(const json& g, const json& base, const std::string& where) {
  SpaceGrid s;
  s.name = g.value("name", std::string("grid"));
  s.block_m = int_list(axis(g, base, "block_m", where), "block_m", where);
  s.block_n = int_list(axis(g, base, "block_n", where), "block_n", where);
  s.block_k = int_list(axis(g, base, "block_k", where), "block_k", where);
  s.num_stages = stage_list(axis(g, base, "num_stages", where), where);
  s.num_math_wg = int_list(axis(g, base, "num_math_wg", where), "num_math_wg", where);
  s.swizzle = int_list(axis(g, base, "swizzle", where), "swizzle", where);
  s.group = int_list(axis(g, base, "group", where), "group", where);
  s.split_k = int_list(axis(g, base, "split_k", where), "split_k", where);
  s.sms = int_list(axis(g, base, "sms", where), "sms", where);
  for (const auto& c : string_list(axis(g, base, "cluster", where), "cluster", where)) {
    int cm = 0, cn = 0;
    char x = 0;
    std::istringstream in(c);
    if (!(in >> cm >> x >> cn) || x != 'x' || !in.eof() || cm < 1 || cn < 1)
      DGT_THROW(ErrorKind::kUsage, "{}: cluster \"{}\" must look like \"2x1\"", where, c);
    s.cluster.emplace_back(cm, cn);
  }
  for (const auto& r : string_list(axis(g, base, "raster", where), "raster", where))
    s.raster.push_back(parse_raster(r, where));
  for (const auto& e : string_list(axis(g, base, "epilogue", where), "epilogue", where))
    s.epilogue.push_back(parse_epilogue(e, where));
  // Optional axes (spaces written before they existed mean the one-group schedule, P = 1).
  const json one_group = json::array({"1g"}), every_block = json::array({1});
  const json& ml = g.contains("mainloop")      ? g.at("mainloop")
                   : base.contains("mainloop") ? base.at("mainloop")
                                               : one_group;
  s.mainloop.clear();
  for (const auto& m : string_list(ml, "mainloop", where)) s.mainloop.push_back(parse_mainloop(m, where));
  const json& pe = g.contains("promote_every")      ? g.at("promote_every")
                   : base.contains("promote_every") ? base.at("promote_every")
                                                    : every_block;
  if (!pe.is_array() || pe.empty())
    DGT_THROW(ErrorKind::kUsage, "{}: \"promote_every\" must be a non-empty array", where);
  s.promote_every.clear();
  for (const auto& e : pe) {
    if (e.is_number_integer() && e.get<int>() >= 1)
      s.promote_every.push_back(e.get<int>());
    else if (e.is_string() && e.get<std::string>() == "max")
      s.promote_every.push_back(0);
    else
      DGT_THROW(ErrorKind::kUsage, "{}: promote_every entry {} must be an integer >= 1 or \"max\"", where, e.dump());
  }
  return s;
}

/// The problem-aware pruning rules P1..P7 (documented in the header).
std::string prune_reason(const KernelConfig& c, const Problem& p, int sm_count) {
  const TileGrid g = TileGrid::of(c, p);
  const int64_t m_blocks = g.m_blocks, n_blocks = g.n_blocks;
  const int64_t tiles = g.tiles();
  if (c.block_m > 64 && c.block_m >= 2 * round_up(p.m, 64))
    return fmt::format("P1: BLOCK_M = {} >= 2 x M rounded up to 64 ({}): a smaller BLOCK_M covers M", c.block_m,
                       round_up(p.m, 64));
  if (c.block_n > 16 && c.block_n >= p.n + 16)
    return fmt::format("P2: BLOCK_N = {} >= N + 16 = {}: a smaller BLOCK_N covers N", c.block_n, p.n + 16);
  if (std::string why = problem_fit(c, p); !why.empty()) return why;
  if (c.split_k > 1 && tiles >= sm_count)
    return fmt::format("P4: split-K = {} but the {} tiles already fill {} SMs", c.split_k, tiles, sm_count);
  if (c.split_k > 1 && g.splits != c.split_k)
    return fmt::format("P5: split-K = {} runs as {} splits for {} k-blocks (a duplicate)", c.split_k, g.splits,
                       g.k_blocks);
  if (c.cluster_m > m_blocks || c.cluster_n > n_blocks)
    return fmt::format("P6: cluster {}x{} is larger than the {}x{} tile grid", c.cluster_m, c.cluster_n, m_blocks,
                       n_blocks);
  if (c.sms > 0) {
    // P5 leaves split_k == g.splits here (R15 keeps split_k >= 1).
    const int64_t units = g.units();
    if (c.sms >= sm_count || c.sms >= units * g.cluster_size())
      return fmt::format("P7: sms = {} does not limit the grid ({} work units, {} SMs)", c.sms, units, sm_count);
  }
  return {};
}

}  // namespace

size_t SpaceGrid::size() const {
  return block_m.size() * block_n.size() * block_k.size() * num_stages.size() * num_math_wg.size() * swizzle.size() *
         cluster.size() * raster.size() * group.size() * epilogue.size() * split_k.size() * sms.size() *
         mainloop.size() * promote_every.size();
}

SearchSpace SearchSpace::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) DGT_THROW(ErrorKind::kUsage, "{}: a search space must be a JSON object", source);
  check_keys(j, source, true);
  SearchSpace s;
  s.name = j.value("name", source);
  if (j.contains("union")) {
    const json base = j.value("base", json::object());
    if (!base.is_object()) DGT_THROW(ErrorKind::kUsage, "{}: \"base\" must be an object of axes", source);
    check_keys(base, source + " base", false);
    if (!j.at("union").is_array() || j.at("union").empty())
      DGT_THROW(ErrorKind::kUsage, "{}: \"union\" must be a non-empty array of grids", source);
    int i = 0;
    for (const auto& g : j.at("union")) {
      const std::string where =
          fmt::format("{} union[{}]{}", source, i++, g.contains("name") ? " (" + g.value("name", "") + ")" : "");
      if (!g.is_object()) DGT_THROW(ErrorKind::kUsage, "{}: must be an object", where);
      check_keys(g, where, false);
      s.grids.push_back(parse_grid(g, base, where));
    }
  } else {
    s.grids.push_back(parse_grid(j, json::object(), source));
    s.grids.back().name = s.name;
  }
  return s;
}

const char* default_space_json();  // generated from configs/spaces/sm90-default.json

SearchSpace SearchSpace::builtin_default() {
  return from_json(json::parse(default_space_json()), "builtin sm90-default (configs/spaces/sm90-default.json)");
}

SearchSpace SearchSpace::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) DGT_THROW(ErrorKind::kIo, "cannot read search space file {}", path);
  std::stringstream ss;
  ss << f.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    DGT_THROW(ErrorKind::kUsage, "{}: invalid JSON: {}", path, e.what());
  }
  return from_json(j, path);
}

size_t SearchSpace::size() const {
  size_t n = 0;
  for (const auto& g : grids) n += g.size();
  return n;
}

Enumeration enumerate(const SearchSpace& space, const Problem& p, int sm_count) {
  Enumeration out;
  std::set<std::string> seen;
  auto add = [&](const SpaceGrid& g, KernelConfig c) {
    if (seen.count(c.key())) return;  // produced by an earlier grid already
    seen.insert(c.key());
    Candidate cand;
    cand.grid = g.name;
    cand.config = c;
    cand.resources = evaluate_resources(KernelSpec::of(c, p));
    cand.pruned = cand.resources.rejection;
    if (cand.pruned.empty()) cand.pruned = prune_reason(c, p, sm_count);
    (cand.pruned.empty() ? out.kept : out.rejected).push_back(std::move(cand));
  };
  for (const auto& g : space.grids)
    for (int bm : g.block_m)
      for (int bn : g.block_n)
        for (int bk : g.block_k)
          for (int st : g.num_stages)
            for (int wg : g.num_math_wg)
              for (int sw : g.swizzle)
                for (auto [cm, cn] : g.cluster)
                  for (Raster r : g.raster)
                    for (int grp : g.group)
                      for (Epilogue e : g.epilogue)
                        for (int sk : g.split_k)
                          for (int sms : g.sms)
                            for (Mainloop ml : g.mainloop)
                              for (int pe : g.promote_every) {
                                KernelConfig c{bm, bn, bk, st, wg, sw, cm, cn, r, grp, e, sk, sms, ml, pe};
                                if (pe <= 0) c.promote_every = p.accum == Accum::kFast ? std::max(1, 2048 / bk) : 1;
                                if (st <= 0) {
                                  // "max" / "max-N": the deepest pipeline that fits, minus N.
                                  const int deepest = deepest_stages(KernelSpec::of(c, p), SearchSpace::kMaxAutoStages);
                                  c.num_stages = deepest ? deepest + st : 2;
                                  if (c.num_stages < 2) continue;  // "max-N" below the minimum: nothing new
                                }
                                add(g, c);
                              }
  return out;
}

}  // namespace dgt
