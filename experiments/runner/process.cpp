#include "experiments/runner/process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace topocoll::experiments {

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& log) {
  ProcessResult r;
  const bool capture = log.empty();
  int pipefd[2] = {-1, -1};
  if (capture && pipe(pipefd) != 0) return r;
  const pid_t pid = fork();
  if (pid < 0) {
    if (capture) {
      close(pipefd[0]);
      close(pipefd[1]);
    }
    return r;
  }
  if (pid == 0) {
    if (capture) {
      dup2(pipefd[1], 1);
      const int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, 2);
      close(pipefd[0]);
      close(pipefd[1]);
    } else {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    _exit(127);
  }
  if (capture) {
    close(pipefd[1]);
    char buf[256];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<std::size_t>(n));
    close(pipefd[0]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

}  // namespace topocoll::experiments
