#include "worker/worker_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

extern char** environ;

namespace dgt {

using nlohmann::json;

namespace {
constexpr auto kQuitGrace = std::chrono::seconds(10);

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}
}  // namespace

WorkerProcess::WorkerProcess(const WorkerCommand& command, std::chrono::milliseconds start_limit)
    : label_(command.label) {
  std::signal(SIGPIPE, SIG_IGN);
  int req[2] = {-1, -1}, rep[2] = {-1, -1};
  if (::pipe2(req, O_CLOEXEC) != 0 || ::pipe2(rep, O_CLOEXEC) != 0) {
    const int err = errno;
    for (int fd : {req[0], req[1], rep[0], rep[1]})
      if (fd >= 0) ::close(fd);
    DGT_THROW(ErrorKind::kIo, "creating the pipes of the {} worker: {}", label_, std::strerror(err));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, req[0], 0);  // requests on its stdin
  posix_spawn_file_actions_adddup2(&fa, 2, 1);       // its stdout joins our stderr: the pipe carries replies only
  posix_spawn_file_actions_adddup2(&fa, rep[1], 3);  // replies on fd 3 (dup2 clears close-on-exec)
  std::vector<char*> argv;
  for (const auto& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Its own process group: Ctrl-C in the terminal reaches only the parent, which stops after the candidate in
  // progress and then ends its workers; a worker killed by the terminal's SIGINT would look like a crash.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const int rc = ::posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  ::close(req[0]);
  ::close(rep[1]);
  to_worker_ = req[1];
  from_worker_ = rep[0];
  reader_ = LineReader(from_worker_);
  if (rc != 0) {
    pid_ = -1;
    reaped_ = true;
    close_fd(to_worker_);
    close_fd(from_worker_);
    DGT_THROW(ErrorKind::kIo, "starting the {} worker ({}): {}", label_, command.argv.at(0), std::strerror(rc));
  }
  json hello;
  LineReader::Result r;
  try {
    r = reader_.read(&hello, start_limit);
  } catch (...) {  // a hello line that is not JSON: no destructor runs for this half-built object
    kill_and_reap();
    close_fd(to_worker_);
    close_fd(from_worker_);
    throw;
  }
  if (r == LineReader::Result::kMessage && hello.value("ok", false) && hello.contains("hello")) {
    hello_ = hello.at("hello");
    return;
  }
  if (r == LineReader::Result::kTimeout) kill_and_reap();
  const std::string how = ended_how();
  close_fd(to_worker_);
  close_fd(from_worker_);
  if (r == LineReader::Result::kMessage)
    throw Error(parse_error_kind(hello.value("kind", "internal")),
                fmt::format("the {} worker could not start: {}", label_, hello.value("error", hello.dump())));
  DGT_THROW(ErrorKind::kCuda, "the {} worker {} before it was ready ({})", label_,
            r == LineReader::Result::kTimeout ? "did not answer within the start limit and was killed" : "ended",
            how);
}

WorkerProcess::~WorkerProcess() {
  if (!reaped_) {
    try {
      write_message(to_worker_, json{{"op", "quit"}});
    } catch (const std::exception&) {
    }
    close_fd(to_worker_);  // EOF also ends it
    const auto deadline = std::chrono::steady_clock::now() + kQuitGrace;
    while (!reaped_ && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) reaped_ = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!reaped_) kill_and_reap();
  }
  close_fd(to_worker_);
  close_fd(from_worker_);
}

void WorkerProcess::kill_and_reap() {
  if (reaped_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  ended_ = "killed by the parent (SIGKILL)";
}

std::string WorkerProcess::ended_how() {
  if (reaped_) return ended_.empty() ? "ended" : ended_;
  const auto deadline = std::chrono::steady_clock::now() + kQuitGrace;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) {
      reaped_ = true;
      return ended_ = fmt::format("waitpid failed: {}", std::strerror(errno));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill_and_reap();
      return ended_ = "closed its pipe but did not exit; killed (SIGKILL)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reaped_ = true;
  if (WIFSIGNALED(status)) {
    end_signal_ = WTERMSIG(status);
    ended_ = fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  else
    ended_ = fmt::format("exit code {}", WEXITSTATUS(status));
  return ended_;
}

WorkerProcess::Outcome WorkerProcess::request(const json& request, std::chrono::milliseconds limit, json* reply) {
  if (reaped_) return Outcome::kNotSent;
  try {
    write_message(to_worker_, request);
  } catch (const Error&) {
    return Outcome::kNotSent;  // EPIPE: it ended before this request
  }
  switch (reader_.read(reply, limit)) {
    case LineReader::Result::kMessage: return Outcome::kReply;
    case LineReader::Result::kEof: return Outcome::kDied;
    case LineReader::Result::kTimeout: break;
  }
  kill_and_reap();
  return Outcome::kTimedOut;
}

}  // namespace dgt
