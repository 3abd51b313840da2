# Daemon helpers shared by start-slurm and stop-slurm (sourced). Only processes named in pid
# files are signalled; nothing is killed by process name.

# True if the pid file names a live, non-zombie process whose command name is $2 (guards against
# recycled pids).
pid_alive() {
  local pidfile=$1 comm=$2 pid
  [[ -s $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/comm && $(</proc/$pid/comm) == "$comm" ]] || return 1
  # a zombie (PID 1 of some containers never reaps) keeps its comm but is dead
  [[ $(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$pid/status" 2>/dev/null) != Z ]]
}

# Stop one daemon through its pid file: TERM, wait up to 10 s, then KILL; returns once it is
# gone (at once if it was not running).
stop_daemon() {
  local pidfile=$1 comm=$2 pid i
  pid_alive "$pidfile" "$comm" || { rm -f "$pidfile"; return 0; }
  pid=$(<"$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    pid_alive "$pidfile" "$comm" || break
    sleep 0.1
  done
  if pid_alive "$pidfile" "$comm"; then
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
  fi
  rm -f "$pidfile"
}
