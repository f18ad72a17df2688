#include "tune/claim_owner.hpp"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace dgt {

namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

/// Field 3 (state) and 22 (start time) of /proc/PID/stat; false when the process does not exist.
bool process_state(long pid, char* state, std::string* start) {
  const std::string stat = read_first_line(fmt::format("/proc/{}/stat", pid));
  const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (stat.empty() || close == std::string::npos) return false;
  std::istringstream in(stat.substr(close + 1));
  std::string field;
  for (int i = 3; in >> field; ++i) {
    if (i == 3) *state = field.empty() ? '?' : field[0];
    if (i == 22) {
      *start = field;
      return true;
    }
  }
  return false;
}

std::map<std::string, std::string> parse_owner(const std::string& owner) {
  std::map<std::string, std::string> out;
  std::istringstream in(owner);
  std::string word;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq != std::string::npos) out[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return out;
}

/// Seconds since the epoch of "YYYY-MM-DDTHH:MM:SSZ"; -1 when it does not parse.
long long parse_utc(const std::string& iso) {
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  if (in.fail()) return -1;
  return static_cast<long long>(timegm(&tm));
}

}  // namespace

std::string this_process_owner() {
  char state = '?';
  std::string start = "0";
  process_state(static_cast<long>(::getpid()), &state, &start);
  return fmt::format("host={} boot={} pid={} start={}", host_name(), read_first_line("/proc/sys/kernel/random/boot_id"),
                     ::getpid(), start);
}

bool claim_is_stale(const std::string& owner, const std::string& claimed_at) {
  const auto f = parse_owner(owner);
  if (!f.count("host") || !f.count("pid") || !f.count("start") || !f.count("boot")) return true;
  if (f.at("host") != host_name()) {
    const long long at = parse_utc(claimed_at);
    const auto lease = std::chrono::duration_cast<std::chrono::seconds>(kForeignClaimLease).count();
    return at < 0 || static_cast<long long>(std::time(nullptr)) - at > lease;
  }
  if (f.at("boot") != read_first_line("/proc/sys/kernel/random/boot_id")) return true;
  long pid = 0;
  try {
    pid = std::stol(f.at("pid"));
  } catch (const std::exception&) {
    return true;
  }
  char state = '?';
  std::string start;
  if (!process_state(pid, &state, &start)) return true;
  return start != f.at("start") || state == 'Z' || state == 'X';
}

}  // namespace dgt
