#include "space/search_space.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace dgt {

namespace {

std::vector<int> int_list(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key)) DGT_THROW(ErrorKind::kUsage, "{}: search space lacks \"{}\"", source, key);
  const auto& v = j.at(key);
  std::vector<int> out;
  if (v.is_object()) {
    if (!v.contains("from") || !v.contains("to") || !v.contains("step") || !v["from"].is_number_integer() ||
        !v["to"].is_number_integer() || !v["step"].is_number_integer() || v["step"].get<int>() <= 0)
      DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" range must be {{\"from\": int, \"to\": int, \"step\": int > 0}}", source, key);
    for (int x = v["from"].get<int>(); x <= v["to"].get<int>(); x += v["step"].get<int>()) out.push_back(x);
  } else if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_number_integer())
        DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" must hold integers, found {}", source, key, e.dump());
      out.push_back(e.get<int>());
    }
  } else {
    DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" must be an array of integers or a range object", source, key);
  }
  if (out.empty()) DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" is empty", source, key);
  return out;
}

std::vector<std::string> string_list(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || !j.at(key).is_array() || j.at(key).empty())
    DGT_THROW(ErrorKind::kUsage, "{}: search space needs a non-empty array \"{}\"", source, key);
  std::vector<std::string> out;
  for (const auto& e : j.at(key)) {
    if (!e.is_string()) DGT_THROW(ErrorKind::kUsage, "{}: \"{}\" must hold strings, found {}", source, key, e.dump());
    out.push_back(e.get<std::string>());
  }
  return out;
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

SearchSpace SearchSpace::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) DGT_THROW(ErrorKind::kUsage, "{}: a search space must be a JSON object", source);
  static const char* kKeys[] = {"name",  "block_m", "block_n", "block_k", "num_stages", "num_math_wg",
                                "swizzle", "cluster", "raster", "group",   "split_k",    "comment"};
  for (const auto& [k, _] : j.items()) {
    bool known = false;
    for (const char* key : kKeys) known = known || k == key;
    if (!known)
      DGT_THROW(ErrorKind::kUsage,
                "{}: unknown key \"{}\" (known: name, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, "
                "cluster, raster, group, split_k, comment)",
                source, k);
  }
  SearchSpace s;
  s.name = j.value("name", source);
  s.block_m = int_list(j, "block_m", source);
  s.block_n = int_list(j, "block_n", source);
  s.block_k = int_list(j, "block_k", source);
  s.num_stages = int_list(j, "num_stages", source);
  s.num_math_wg = int_list(j, "num_math_wg", source);
  s.swizzle = int_list(j, "swizzle", source);
  s.group = int_list(j, "group", source);
  s.split_k = int_list(j, "split_k", source);
  for (const auto& c : string_list(j, "cluster", source)) {
    int cm = 0, cn = 0;
    char x = 0;
    std::istringstream in(c);
    if (!(in >> cm >> x >> cn) || x != 'x' || !in.eof() || cm < 1 || cn < 1)
      DGT_THROW(ErrorKind::kUsage, "{}: cluster \"{}\" must look like \"2x1\"", source, c);
    s.cluster.emplace_back(cm, cn);
  }
  for (const auto& r : string_list(j, "raster", source)) {
    if (r != "m" && r != "n") DGT_THROW(ErrorKind::kUsage, "{}: raster \"{}\" must be \"m\" or \"n\"", source, r);
    s.raster.push_back(r == "m" ? Raster::kAlongM : Raster::kAlongN);
  }
  return s;
}

SearchSpace SearchSpace::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) DGT_THROW(ErrorKind::kIo, "cannot read search space file {}", path);
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    DGT_THROW(ErrorKind::kUsage, "{}: invalid JSON: {}", path, e.what());
  }
  return from_json(j, path);
}

SearchSpace SearchSpace::builtin_default() {
  static const char* kDefault = R"({
  "name": "sm90-default",
  "block_m": [64, 128, 256],
  "block_n": {"from": 16, "to": 256, "step": 16},
  "block_k": [128],
  "num_stages": [2, 3, 4, 5, 6, 7, 8],
  "num_math_wg": [1, 2],
  "swizzle": [128],
  "cluster": ["1x1"],
  "raster": ["m"],
  "group": [8],
  "split_k": [1]
})";
  return from_json(nlohmann::json::parse(kDefault), "builtin sm90-default");
}

size_t SearchSpace::size() const {
  return block_m.size() * block_n.size() * block_k.size() * num_stages.size() * num_math_wg.size() * swizzle.size() *
         cluster.size() * raster.size() * group.size() * split_k.size();
}

Enumeration enumerate(const SearchSpace& space, const Problem& p) {
  Enumeration out;
  for (int bm : space.block_m)
    for (int bn : space.block_n)
      for (int bk : space.block_k)
        for (int st : space.num_stages)
          for (int wg : space.num_math_wg)
            for (int sw : space.swizzle)
              for (auto [cm, cn] : space.cluster)
                for (Raster r : space.raster)
                  for (int g : space.group)
                    for (int sk : space.split_k) {
                      Candidate c;
                      c.config = KernelConfig{bm, bn, bk, st, wg, sw, cm, cn, r, g, Epilogue::kDirect, sk};
                      c.resources = evaluate_resources(KernelSpec::of(c.config, p));
                      c.pruned = c.resources.rejection;
                      if (c.pruned.empty() && bm > 64 && bm >= 2 * round_up(p.m, 64))
                        c.pruned = fmt::format("P1: BLOCK_M = {} >= 2 x M rounded up to 64 ({}): a smaller BLOCK_M covers M", bm,
                                               round_up(p.m, 64));
                      if (c.pruned.empty() && bn > 16 && bn >= p.n + 16)
                        c.pruned = fmt::format("P2: BLOCK_N = {} >= N + 16 = {}: a smaller BLOCK_N covers N", bn, p.n + 16);
                      (c.pruned.empty() ? out.kept : out.rejected).push_back(std::move(c));
                    }
  return out;
}

}  // namespace dgt
