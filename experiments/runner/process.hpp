// Running a program and waiting for it: the one subprocess helper of the runner (git describe
// for provenance, mpirun ... topocoll-bench for engine real).
#pragma once

#include <string>
#include <vector>

namespace topocoll::experiments {

struct ProcessResult {
  // The exit status; 128 + the signal when killed; 127 when the program could not be executed;
  // -1 when no process could be started.
  int status = -1;
  std::string out;  // stdout, when captured
};

// Runs argv (argv[0] searched on PATH) and waits for it. With `log` empty, stdout is captured
// into ProcessResult::out and stderr discarded; otherwise stdout and stderr both go to the file
// `log` (truncated first).
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& log = "");

}  // namespace topocoll::experiments
