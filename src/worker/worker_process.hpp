// The parent's handle on one worker process (wire format in worker/wire.hpp): started with posix_spawn,
// requests on its stdin, replies on its fd 3, its stdout and stderr on ours (its log lines). A worker that
// dies or stops answering is reported, never waited for forever.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/wire.hpp"

namespace dgt {

/// How to start a worker: argv[0] is the executable's path (e.g. /proc/self/exe resolved), `label` names it
/// in messages ("gpu 1").
struct WorkerCommand {
  std::vector<std::string> argv;
  std::string label;
};

class WorkerProcess {
 public:
  /// Starts the worker and waits up to `start_limit` for its hello line. Throws Error(kIo) when it cannot be
  /// started, and the worker's own error (its kind, e.g. kNoDevice or kUsage, and message) when it refused
  /// to start; a worker that died or stayed silent is Error(kCuda) naming how it ended. Ignores SIGPIPE in
  /// this process (writing to a dead worker is then an error, not a signal).
  WorkerProcess(const WorkerCommand& command, std::chrono::milliseconds start_limit);
  /// Asks the worker to quit, waits up to 10 s, then kills it (SIGKILL); always reaps it.
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  /// The hello line's "hello" object (the device fingerprint).
  const nlohmann::json& hello() const { return hello_; }
  pid_t pid() const { return pid_; }
  const std::string& label() const { return label_; }

  enum class Outcome {
    kReply,     ///< *reply holds the answer
    kDied,      ///< the worker ended before answering (ended_how() says how)
    kTimedOut,  ///< no answer within the limit: the worker was killed
    kNotSent,   ///< the request could not be written: the worker had already ended (ended_how() says how)
  };
  /// Sends `request` and waits up to `limit` for the reply.
  Outcome request(const nlohmann::json& request, std::chrono::milliseconds limit, nlohmann::json* reply);
  /// After kDied or kTimedOut: waits for the process (killing it after 10 s) and says how it ended:
  /// "signal 11 (Segmentation fault)", "exit code 1". Idempotent.
  std::string ended_how();
  /// After ended_how(): the signal that ended the worker (0 when it exited, or when this process killed it after
  /// a time limit).
  int end_signal() const { return end_signal_; }

 private:
  void kill_and_reap();

  std::string label_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  LineReader reader_{-1};
  nlohmann::json hello_;
  bool reaped_ = false;
  std::string ended_;
  int end_signal_ = 0;
};

}  // namespace dgt
