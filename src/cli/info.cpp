// dgtune info: device fingerprint, limits and versions.
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/tables.hpp"

namespace dgt::cli {

namespace {
struct Args {
  DeviceOption device;
  FormatOption format{report::kInfoDocument};
};

int run(const Args& a) {
  a.format.render(info_table(a.device.ordinal));
  return 0;
}
}  // namespace

void add_info(CLI::App& app, Action& action) {
  auto [cmd, a] =
      add_command<Args>(app, action, "info", "device fingerprint, limits (SMs, shared memory, L2) and versions", run);
  add_groups(cmd, a.device, a.format);
}

}  // namespace dgt::cli
