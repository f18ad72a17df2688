// The layering guard: every `#include "module/..."` edge between src/ modules must be listed in
// docs/architecture.md, every module must be listed, and the listed graph must be acyclic.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using Graph = std::map<std::string, std::set<std::string>>;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Parses the block between the module-edges markers: one "module: dep dep ..." line per module.
Graph parse_allowed(const std::string& doc) {
  const auto begin = doc.find("<!-- module-edges:begin -->");
  const auto end = doc.find("<!-- module-edges:end -->");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return {};
  std::istringstream in(doc.substr(begin, end - begin));
  Graph g;
  std::string line;
  const std::regex row(R"(^([a-z_]+):(.*)$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    auto& deps = g[m[1]];
    std::istringstream words(m[2].str());
    std::string w;
    while (words >> w) deps.insert(w);
  }
  return g;
}

/// Module -> the modules its files include (only includes naming an existing src/ module).
Graph actual_edges(const fs::path& src, std::map<std::string, std::string>* example) {
  Graph g;
  const std::regex inc(R"(^\s*#\s*include\s+"([a-z_]+)/)");
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const auto rel = fs::relative(e.path(), src);
    if (std::distance(rel.begin(), rel.end()) < 2) continue;  // src/main.cpp is no module
    const std::string module = rel.begin()->string();
    std::ifstream in(e.path());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      std::smatch m;
      if (!std::regex_search(line, m, inc)) continue;
      const std::string target = m[1];
      if (target == module || !fs::is_directory(src / target)) continue;
      g[module].insert(target);
      (*example)[module + "->" + target] = rel.string() + ":" + std::to_string(n);
    }
  }
  return g;
}

/// A cycle in g as "a -> b -> a", or empty.
std::string find_cycle(const Graph& g) {
  std::map<std::string, int> state;
  std::string cycle;
  std::function<bool(const std::string&, std::string)> dfs = [&](const std::string& u, std::string path) {
    state[u] = 1;
    path += u;
    auto it = g.find(u);
    if (it != g.end())
      for (const auto& v : it->second) {
        if (state[v] == 1) {
          cycle = path + " -> " + v;
          return true;
        }
        if (state[v] == 0 && dfs(v, path + " -> ")) return true;
      }
    state[u] = 2;
    return false;
  };
  for (const auto& [u, _] : g)
    if (state[u] == 0 && dfs(u, "")) return cycle;
  return {};
}

const fs::path kRoot = DGT_SOURCE_DIR;

TEST(ModuleEdges, ListedGraphIsAcyclicAndCoversEveryModule) {
  const Graph allowed = parse_allowed(read_file(kRoot / "docs/architecture.md"));
  ASSERT_FALSE(allowed.empty()) << "docs/architecture.md has no module-edges block";
  EXPECT_EQ(find_cycle(allowed), "");
  for (const auto& e : fs::directory_iterator(kRoot / "src"))
    if (e.is_directory()) EXPECT_TRUE(allowed.count(e.path().filename().string())) << e.path() << " is not listed";
  for (const auto& [m, deps] : allowed)
    for (const auto& d : deps) EXPECT_TRUE(allowed.count(d)) << m << " lists unknown module " << d;
}

TEST(ModuleEdges, EveryIncludeEdgeIsListed) {
  const Graph allowed = parse_allowed(read_file(kRoot / "docs/architecture.md"));
  std::map<std::string, std::string> where;
  const Graph actual = actual_edges(kRoot / "src", &where);
  ASSERT_FALSE(actual.empty());
  for (const auto& [m, deps] : actual)
    for (const auto& d : deps) {
      const auto it = allowed.find(m);
      EXPECT_TRUE(it != allowed.end() && it->second.count(d))
          << "edge " << m << " -> " << d << " (" << where[m + "->" + d] << ") is not in docs/architecture.md";
    }
}

TEST(ModuleEdges, CycleFinderFindsACycle) {
  // The guard itself must be able to fail.
  EXPECT_NE(find_cycle({{"a", {"b"}}, {"b", {"c"}}, {"c", {"a"}}}), "");
  EXPECT_EQ(find_cycle({{"a", {"b"}}, {"b", {"c"}}, {"c", {}}}), "");
  EXPECT_EQ(parse_allowed("<!-- module-edges:begin -->\nx: y z\ny:\n<!-- module-edges:end -->").at("x"),
            (std::set<std::string>{"y", "z"}));
}

}  // namespace
